"""LINE 投稿設定's 友だち追加時の返信 as a manager writes it: a text, an image and a coupon picked
from the account's, checked against LINE's rules on save and previewed as the bubbles a new
friend sees. The message objects the form builds are shown only to superusers.

LINE's rules: https://developers.line.biz/en/reference/messaging-api/#message-objects
(text up to 5,000 characters; image URLs https, up to 2,000 characters, JPEG or PNG up to
10 MB; at most 5 messages in one reply)."""

from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError
from django.template.loader import render_to_string
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.preview import bubble
from core.transport import TransportError
from line.coupons import account_coupons
from line.messages import TEXT_MAX, URL_MAX, validate_line_messages
from line.models import LinePushSettings

# The kinds the form writes; a reply holding any other kind (set up before the form, or by an
# engineer) keeps those messages after the form's, unchanged.
FORM_KINDS = ("text", "image", "coupon")


class LinePushSettingsForm(forms.ModelForm):
    reply_text = forms.CharField(
        label=_("友だち追加時の返信: テキスト"),
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4, "cols": 60}),
        help_text=_("友だち追加してくれた人に最初に届くメッセージです。空欄 = テキストを送りません。"),
    )
    reply_image_url = forms.CharField(
        label=_("友だち追加時の返信: 画像の URL"),
        required=False,
        widget=forms.URLInput(attrs={"size": 60}),
        help_text=_("https で始まる画像の URL（JPEG か PNG、10 MB まで）。空欄 = 画像を送りません。"),
    )
    registration_coupon = forms.ChoiceField(label=_("友だち追加時の返信: クーポン"), required=False)

    class Meta:
        model = LinePushSettings
        # Every setting but the stored reply, which the three fields above build.
        fields = ("tenant", "plan", "tenant_rate_limit", "tenant_rate_window_seconds", "timezone")
        fields += ("digest_hour",)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        stored = self.instance.registration_messages or []
        first: dict[str, dict] = {}
        self.others: list = []  # kept as they are, after the form's messages
        for message in stored:
            kind = message.get("type") if isinstance(message, dict) else None
            if kind in FORM_KINDS and kind not in first:
                first[kind] = message
            else:
                self.others.append(message)
        self.initial.setdefault("reply_text", first.get("text", {}).get("text", ""))
        self.initial.setdefault("reply_image_url", first.get("image", {}).get("originalContentUrl", ""))
        coupon_id = first.get("coupon", {}).get("couponId", "")
        self.initial.setdefault("registration_coupon", coupon_id)
        field = self.fields["registration_coupon"]
        field.choices, field.help_text = coupon_choices(self.instance)
        if coupon_id and coupon_id not in dict(field.choices):
            # Kept selectable so a save does not drop it; the check on save says if LINE ended it.
            field.choices = [*field.choices, (coupon_id, coupon_id)]

    def clean_reply_text(self) -> str:
        text = self.cleaned_data["reply_text"]
        if not text.strip():
            return ""
        length = len(text.encode("utf-16-le")) // 2  # the stricter count: see templates.py
        if length > TEXT_MAX:
            raise ValidationError(
                gettext("%(length)s 文字あります。LINE で送れるのは %(max)s 文字までです。")
                % {"length": f"{length:,}", "max": f"{TEXT_MAX:,}"}
            )
        return text

    def clean_reply_image_url(self) -> str:
        url = self.cleaned_data["reply_image_url"].strip()
        if not url:
            return ""
        if not url.lower().startswith("https://") or len(url) <= len("https://"):
            raise ValidationError(gettext("LINE は https で始まる URL の画像しか送れません。"))
        if len(url) > URL_MAX:
            raise ValidationError(
                gettext("URL が %(length)s 文字あります。LINE で送れるのは %(max)s 文字までです。")
                % {"length": f"{len(url):,}", "max": f"{URL_MAX:,}"}
            )
        return url

    def clean(self) -> dict:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        messages = reply_messages(
            text=cleaned.get("reply_text", ""),
            image_url=cleaned.get("reply_image_url", ""),
            coupon_id=cleaned.get("registration_coupon", ""),
        )
        messages += self.others
        if messages and (problems := validate_line_messages(messages)):
            raise ValidationError(problems)
        # The model's check (is the coupon one LINE runs now?) reads it from the instance.
        self.instance.registration_messages = messages
        return cleaned

    def _update_errors(self, errors: ValidationError) -> None:
        # The model names the stored field, which this form does not show: its coupon
        # problem belongs to the coupon picked here.
        if hasattr(errors, "error_dict") and "registration_messages" in errors.error_dict:
            found = errors.error_dict.pop("registration_messages")
            errors.error_dict.setdefault("registration_coupon", []).extend(found)
        super()._update_errors(errors)


def reply_messages(*, text: str, image_url: str, coupon_id: str) -> list[dict]:
    messages: list[dict] = []
    if text:
        messages.append({"type": "text", "text": text})
    if image_url:
        messages.append({"type": "image", "originalContentUrl": image_url, "previewImageUrl": image_url})
    if coupon_id:
        messages.append({"type": "coupon", "couponId": coupon_id})
    return messages


def coupon_choices(row: LinePushSettings) -> tuple[list[tuple[str, str]], str]:
    """The coupons LINE runs on the tenant's account (`GET /v2/bot/coupon`), LINE Official
    Account Manager's included."""
    empty = [("", gettext("クーポンなし"))]
    if row.pk is None:
        return empty, gettext("保存後、LINE のクーポンから選べます。")
    try:
        coupons = account_coupons(tenant=row.tenant)
    except TransportError as exc:
        return empty, gettext("LINE からクーポンを読めませんでした: %(error)s") % {"error": exc.message}
    choices = [(c.coupon_id, c.title) for c in coupons]
    help_text = gettext(
        "LINE のこのアカウントで配布中のクーポン（LINE Official Account Manager で作ったものを含む）から選べます。"
    )
    return empty + choices, help_text if choices else gettext("配布中のクーポンはありません。")


def _coupon_titles(row: LinePushSettings) -> dict[str, str]:
    try:
        return {c.coupon_id: c.title for c in account_coupons(tenant=row.tenant)}
    except TransportError:
        return {}


def registration_preview(row: LinePushSettings) -> str:
    """The saved reply as the bubbles a new friend sees."""
    messages = [m for m in (row.registration_messages or []) if isinstance(m, dict)]
    if not messages:
        return gettext(
            "返信しません（テキスト・画像・クーポンのどれかを入れると、友だち追加した人に返信します）。"
        )
    titles = _coupon_titles(row) if any(m.get("type") == "coupon" for m in messages) else {}
    bubbles = []
    for message in messages:
        drawn = bubble(message, row.tenant.image_hosts())
        if drawn["kind"] == "coupon":
            drawn["text"] = titles.get(drawn["text"], drawn["text"])
        bubbles.append(drawn)
    context = {
        "bubbles": bubbles,
        "name": row.tenant.name,
        "time": None,
        "group": gettext("友だち追加した人"),
    }
    return render_to_string("admin/console/push_bubbles.html", context)


registration_preview.short_description = _("友だち追加時の返信（LINE での表示）")


def registration_json(row: LinePushSettings) -> str:
    """The message objects sent to LINE: for superusers, who look into what LINE received."""
    return format_html("<pre>{}</pre>", json.dumps(row.registration_messages, ensure_ascii=False, indent=2))


registration_json.short_description = _("友だち追加時の返信（送信する JSON）")
