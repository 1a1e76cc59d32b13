"""Form widgets of the settings a manager edits, instead of raw JSON: the quiet hours as
on/off, a mode, a time zone and time ranges (`<input type=time>` pairs); the operators as
rows of a type (ID / ログインID) and a value."""

from __future__ import annotations

import json
import re

from django import forms
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext

from core.models import OPERATOR_ENTRY, operator_entry
from core.quiet_hours import DEFAULT_TIMEZONE

CODE_ASIDE = re.compile(r"（[a-z_]+）$")
QUIET_RANGES = 3  # rows of the form; a tenant needing more is unheard of
MODES = [("reject", _("承認を断る")), ("defer", _("時間帯の終わりに送る"))]


def plain_label(label) -> str:
    """A choice's label without the stored value a Japanese label names in parentheses
    (`承認を取り消す（invalidate）`): the value is the system's, the words the manager's."""
    return CODE_ASIDE.sub("", str(label))


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


OPERATOR_TYPES = [("id", _("ID")), ("user", _("ログインID"))]
OPERATOR_PROBLEMS = {
    "id": _("ID は Backlog の数値のユーザーIDです（例: 1001）。"),
    "user": _("ログインID に空白と「:」は使えません（100 文字まで）。"),
}


class OperatorsWidget(forms.Widget):
    """`["id:1001", "user:yamada"]` (core.models.validate_operators) as rows of a type and a
    value, one more empty row to add to, and buttons to add and remove rows
    (console/operators.js; without it, clearing a value removes its row).

    Each row posts `<name>_type` and `<name>_value`; the widget hands the field the typed
    entries as JSON text, and the model's validator judges them. A row it would refuse is
    shown with its reason under it."""

    class Media:
        js = ["console/operators.js"]

    def value_from_datadict(self, data, files, name):
        types, values = data.getlist(f"{name}_type"), data.getlist(f"{name}_value")
        if not types and not values and name in data:
            return data[name]  # the JSON text itself, from a client that posts no rows
        entries = []
        for kind, value in zip(types, values, strict=False):
            value = (value or "").strip()
            if value:
                # A pasted typed entry (`user:yamada`) keeps its own type.
                typed = value.split(":", 1)[0] in dict(OPERATOR_TYPES)
                entries.append(value if typed else f"{kind}:{value}")
        return json.dumps(list(dict.fromkeys(entries)), ensure_ascii=False)

    def value_omitted_from_data(self, data, files, name):
        return f"{name}_value" not in data and name not in data

    @staticmethod
    def rows(value) -> list[tuple[str, str]]:
        """(type, value) of each entry; an untyped one read as core reads it (digits = ID)."""
        if isinstance(value, str):  # the JSON form field hands its value back as text
            try:
                value = json.loads(value or "[]")
            except ValueError:
                value = []
        entries = [str(v) for v in value if str(v).strip()] if isinstance(value, list) else []
        rows = []
        for entry in entries:
            kind, _sep, rest = entry.partition(":")
            if kind not in dict(OPERATOR_TYPES):
                kind, _sep, rest = operator_entry(entry).partition(":")
            rows.append((kind, rest))
        return rows

    def render(self, name, value, attrs=None, renderer=None):
        attrs = self.build_attrs(self.attrs, attrs)
        base_id = attrs.get("id") or f"id_{name}"
        rows = [*self.rows(value), ("id", "")]
        body = format_html_join(
            "", "{}", ((self._row(name, base_id, n, *row),) for n, row in enumerate(rows))
        )
        return format_html(
            '<div class="am-operators" id="operators">'
            '<table class="am-operator-rows"><thead><tr><th>{}</th><th>{}</th><th></th></tr></thead>'
            "<tbody>{}</tbody></table>"
            '<template class="am-operator-template">{}</template>'
            '<p><button type="button" class="button am-operator-add">{}</button></p>'
            '<p class="help">{}</p></div>',
            _("種類"),
            _("値"),
            body,
            self._row(name, base_id, "new", "id", ""),
            _("行を追加"),
            _(
                "ID = Backlog の数値のユーザーID（例: 1001）、ログインID = Backlog にログインするときの ID（例: yamada）。"
                "表示名は一意ではないため使えません。値が空の行は使われません。"
            ),
        )

    @staticmethod
    def _row(name: str, base_id: str, n, kind: str, value: str) -> str:
        entry = f"{kind}:{value}"
        problem = OPERATOR_PROBLEMS.get(kind) if value and not OPERATOR_ENTRY.fullmatch(entry) else None
        select = forms.Select(choices=OPERATOR_TYPES).render(
            f"{name}_type", kind, {"id": f"{base_id}_type_{n}", "aria-label": _("種類")}
        )
        text_id = base_id if n == 0 else f"{base_id}_value_{n}"  # the field's label points at row 1
        text = forms.TextInput(attrs={"size": 24}).render(
            f"{name}_value", value, {"id": text_id, "aria-label": _("値")}
        )
        error = (
            format_html('<ul class="errorlist am-operator-error"><li>{}</li></ul>', problem)
            if problem
            else ""
        )
        return format_html(
            '<tr class="am-operator-row{}"><td>{}</td><td>{}{}</td>'
            '<td><button type="button" class="button am-operator-remove">{}</button></td></tr>',
            " am-operator-invalid" if problem else "",
            select,
            text,
            error,
            _("削除"),
        )
