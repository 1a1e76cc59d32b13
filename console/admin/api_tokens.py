"""LINE post API tokens: what each may post (a superuser's decision), and revoking, one way."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from console.access import TenantScopedAdmin
from console.actions import bulk_action
from console.services import api_token_revoke
from core.access import may_act_somewhere
from line.models import Trigger
from linepush.models import LineApiToken


class LineApiTokenForm(forms.ModelForm):
    allowed_triggers = forms.MultipleChoiceField(
        label=LineApiToken._meta.get_field("allowed_triggers").verbose_name,
        help_text=LineApiToken._meta.get_field("allowed_triggers").help_text,
        choices=Trigger.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
    )

    class Meta:
        model = LineApiToken
        fields = ("allowed_triggers", "skip_approval")


@admin.register(LineApiToken)
class LineApiTokenAdmin(TenantScopedAdmin):
    """Tokens are issued with `manage.py linepush_token`; here they are seen and revoked.

    What a token may post (its trigger types, whether its posts skip approval) is set by a
    superuser; managers see it. Revoking is one way: `revoked_at` is never a form field,
    only the action sets it.
    """

    form = LineApiTokenForm
    list_display = (
        "name",
        "prefix",
        "tenant",
        "allowed_triggers",
        "skip_approval",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    fields = (
        "tenant",
        "name",
        "prefix",
        "allowed_triggers",
        "skip_approval",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    superuser_fields = ("allowed_triggers", "skip_approval")
    readonly_fields = ("tenant", "name", "prefix", "created_at", "last_used_at", "revoked_at")
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def get_actions(self, request: HttpRequest):
        return super().get_actions(request) if may_act_somewhere(request.user) else {}

    @admin.action(description=_("選択したトークンを無効化する（元に戻せません）"))
    def revoke(self, request, queryset: QuerySet[LineApiToken]) -> None:
        bulk_action(self, request, queryset, _revoke, done_text=_("%(count)d 件を無効化しました。"))


def _revoke(token, user):
    return api_token_revoke(token=token, user=user)
