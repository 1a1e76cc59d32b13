"""Instagram / TikTok / HubSpot accounts and posts: deliveries' ChannelAccount and
ChannelPost, scoped to the user's tenants."""

from __future__ import annotations

import copy

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from console.access import RecordAdmin, TenantScopedAdmin
from console.filters import ChannelFilter
from core.channels import channel_label
from core.crypto import mask
from deliveries.channels.models import ChannelAccount, ChannelPost
from deliveries.setup.connections import account_check, connections_record

CHANNEL_SECRET_FIELDS = ("access_token", "refresh_token")


class ChannelAccountForm(forms.ModelForm):
    """Tokens are write-only, as in TenantForm: shown masked, kept when left empty.

    Saving a new token clears the "token invalid" flag and records when it was set.
    """

    skip_connection_check = forms.BooleanField(
        label=_("接続を確認せずに保存する"),
        required=False,
        help_text=_("プラットフォームに問い合わせずに保存します（あとで「接続状況」で確認してください）。"),
    )

    class Meta:
        model = ChannelAccount
        exclude = ("refresh_lease_until", "token_invalid_at", "refreshed_at")  # noqa: DJ006
        widgets = {f: forms.PasswordInput(render_value=False) for f in CHANNEL_SECRET_FIELDS}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in CHANNEL_SECRET_FIELDS:
            current = getattr(self.instance, name, "")
            self.fields[name].required = name == "access_token" and not current
            if current:
                self.fields[name].help_text = _("現在: %(masked)s（変更する場合のみ入力）") % {
                    "masked": mask(current)
                }

    def clean(self):
        cleaned = super().clean()
        self.new_token = any(cleaned.get(name) for name in CHANNEL_SECRET_FIELDS)
        for name in CHANNEL_SECRET_FIELDS:
            if not cleaned.get(name) and self.instance.pk:
                cleaned[name] = getattr(self.instance, name)
        self.connection_result = self._connection_checked(cleaned)
        return cleaned

    def _connection_checked(self, cleaned: dict):
        """The token and the account as typed in, asked of the platform before they are saved."""
        if self.errors or cleaned.get("skip_connection_check") or not cleaned.get("tenant"):
            return None
        candidate = copy.copy(self.instance)
        for name, value in cleaned.items():
            if name != "skip_connection_check":
                setattr(candidate, name, value)
        candidate.pk = None  # its token as typed, not a refresh of the stored one
        result = account_check(candidate)
        if not result.ok:
            self.add_error(None, result.problem)
        return result

    def save(self, commit=True):
        if getattr(self, "new_token", False):
            self.instance.token_invalid_at = None
            self.instance.refreshed_at = timezone.now()
        return super().save(commit)


@admin.register(ChannelAccount)
class ChannelAccountAdmin(TenantScopedAdmin):
    """A platform account's tokens and ids are integration settings: superusers (or `add_channel`)
    set them; managers and viewers see the account with its tokens masked (console.access)."""

    form = ChannelAccountForm
    secret_fields = CHANNEL_SECRET_FIELDS
    list_display = ("tenant", "channel", "expires_at", "refreshed_at", "token_invalid_at", "hubspot_mode")
    list_filter = ("tenant", "channel")
    readonly_fields = ("token_invalid_at", "refreshed_at", "refresh_lease_until", "created_at", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def save_model(self, request: HttpRequest, obj: ChannelAccount, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        result = getattr(form, "connection_result", None)
        if result is not None:
            connections_record(tenant=obj.tenant, results=[result])
        elif form.cleaned_data.get("skip_connection_check"):
            messages.warning(request, _("トークンを確認せずに保存しました。「接続状況」で確認してください。"))

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_superuser


@admin.register(ChannelPost)
class ChannelPostAdmin(RecordAdmin):
    """Where each publication stands: the platform ids saved at every step."""

    list_display = (
        "task_link",
        "approval_seq",
        "channel_label",
        "phase",
        "post_id",
        "permalink",
        "published_at",
    )
    list_filter = ("tenant", ChannelFilter, "phase")
    list_select_related = ("task",)
    search_fields = ("task__issue_key", "post_id", "container_id", "publish_id", "note_id")
    # What a manager reads: which task, where it stands, the post and its link; the platform's
    # working ids and the stored answers are for superusers.
    SHOWN = ("task_link", "approval_seq", "channel_label", "phase", "post_id", "permalink", "published_at")
    SHOWN += ("platform_status", "created_at", "updated_at")

    def get_fields(self, request: HttpRequest, obj=None):
        if request.user.is_superuser:
            return ["task_link", "channel_label", *(f.name for f in ChannelPost._meta.fields)]
        return list(self.SHOWN)

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return self.get_fields(request, obj)

    @admin.display(description=_("タスク"), ordering="task__issue_key")
    def task_link(self, obj: ChannelPost) -> str:
        url = reverse("admin:deliveries_contenttask_change", args=[obj.task_id])
        return format_html('<a href="{}">{} {}</a>', url, obj.task.issue_key, obj.task.summary)

    @admin.display(description=_("チャネル"), ordering="channel")
    def channel_label(self, obj: ChannelPost) -> str:
        return channel_label(obj.channel)
