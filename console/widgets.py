"""Form widgets of the settings a manager edits, instead of raw JSON: the quiet hours as
on/off, a mode, a time zone and time ranges (`<input type=time>` pairs)."""

from __future__ import annotations

import json

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext

from core.quiet_hours import DEFAULT_TIMEZONE

QUIET_RANGES = 3  # rows of the form; a tenant needing more is unheard of
MODES = [("reject", _("承認を断る（reject）")), ("defer", _("時間帯の終わりに送る（defer）"))]


class QuietHoursWidget(forms.MultiWidget):
    """`{"enabled", "timezone", "ranges": [{"from", "to"}], "mode"}` (core.quiet_hours) as fields.

    An empty block stays empty (no quiet hours); a range with one end missing is kept as it
    is, so the model's validator names the problem instead of the range vanishing."""

    def __init__(self, attrs=None):
        times = []
        for _n in range(QUIET_RANGES):
            times += [forms.TimeInput(attrs={"type": "time"}), forms.TimeInput(attrs={"type": "time"})]
        widgets = [
            forms.CheckboxInput(),
            forms.Select(choices=MODES),
            forms.TextInput(attrs={"size": 16}),
            *times,
        ]
        super().__init__(widgets, attrs)

    def decompress(self, value):
        if isinstance(value, str):  # the JSON form field hands its value back as text
            try:
                value = json.loads(value or "{}")
            except ValueError:
                value = {}
        value = value if isinstance(value, dict) else {}
        ranges = [r for r in value.get("ranges") or [] if isinstance(r, dict)][:QUIET_RANGES]
        times = []
        for n in range(QUIET_RANGES):
            entry = ranges[n] if n < len(ranges) else {}
            times += [entry.get("from", ""), entry.get("to", "")]
        enabled = bool(value) and value.get("enabled", True) is not False
        return [enabled, value.get("mode", "reject"), value.get("timezone", DEFAULT_TIMEZONE), *times]

    def value_from_datadict(self, data, files, name):
        """JSON text, as the model's JSON form field reads it (`{}` text is not "empty" to it)."""
        enabled, mode, zone, *times = super().value_from_datadict(data, files, name)
        ranges = [
            {"from": (start or "").strip(), "to": (end or "").strip()}
            for start, end in zip(times[::2], times[1::2], strict=True)
            if (start or "").strip() or (end or "").strip()
        ]
        if not enabled and not ranges:
            return "{}"
        block = {
            "enabled": bool(enabled),
            "timezone": zone or DEFAULT_TIMEZONE,
            "ranges": ranges,
            "mode": mode,
        }
        return json.dumps(block, ensure_ascii=False)

    def render(self, name, value, attrs=None, renderer=None):
        values = self.decompress(value)
        attrs = self.build_attrs(self.attrs, attrs)
        base_id = attrs.get("id") or f"id_{name}"
        parts = [
            widget.render(f"{name}_{n}", values[n], {"id": f"{base_id}_{n}"}, renderer)
            for n, widget in enumerate(self.widgets)
        ]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td></tr>",
            ((parts[3 + 2 * n], parts[4 + 2 * n]) for n in range(QUIET_RANGES)),
        )
        return format_html(
            '<div class="am-quiet-hours" id="quiet-hours">'
            "<p><label>{} {}</label></p><p><label>{} {}</label> <label>{} {}</label></p>"
            '<table class="am-quiet-ranges"><thead><tr><th>{}</th><th>{}</th></tr></thead>'
            '<tbody>{}</tbody></table><p class="help">{}</p></div>',
            parts[0],
            _("静粛時間帯を使う"),
            _("時間帯に入った配信"),
            parts[1],
            _("タイムゾーン"),
            parts[2],
            pgettext("時間帯", "開始"),
            pgettext("時間帯", "終了"),
            rows,
            _("例: 開始 22:00、終了 07:00（日をまたぐ時間帯も 1 行で書けます）。空の行は使われません。"),
        )
