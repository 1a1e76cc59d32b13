"""The English catalog (locale/en): complete, compiled, and covering every label a manager sees.

The source strings are Japanese (LANGUAGE_CODE = "ja"); English comes from
locale/en/LC_MESSAGES/django.po, compiled to django.mo and committed. After adding or
changing a string: manage.py makemessages -l en (see the .po header), translate, then
manage.py compilemessages.
"""

from __future__ import annotations

import ast
import gettext
import re
import struct
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin
from django.core.management import call_command
from django.utils import translation

from deliveries.models import (
    FIELD_DELIVERED_AT,
    FIELD_PUBLISH_AT,
    STATUS_APPROVED,
    STATUS_DELIVERED,
    STATUS_ERROR,
)

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "locale/en/LC_MESSAGES"
APPS = ("automedia_site", "backlog_bridge", "console", "core", "deliveries", "line", "linepush")
JAPANESE = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
# Names that are Backlog's own (statuses, custom fields): English labels quote them as they are.
BACKLOG_NAMES = (STATUS_APPROVED, STATUS_DELIVERED, STATUS_ERROR, FIELD_DELIVERED_AT, FIELD_PUBLISH_AT)
PO_FIELD = re.compile(r'^(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?) (".*")$')
TRANSLATORS = {"_", "gettext", "gettext_lazy", "gettext_noop", "ngettext", "ngettext_lazy"}
CONTEXT_TRANSLATORS = {"pgettext", "pgettext_lazy", "npgettext", "npgettext_lazy"}


def po_entries() -> list[dict[str, str]]:
    """Every entry of the .po but the header, as {field: text, "fuzzy": "1"?}."""
    entries = []
    for block in (CATALOG / "django.po").read_text(encoding="utf-8").split("\n\n"):
        entry, field = {}, None
        for line in block.splitlines():
            if line.startswith("#,") and "fuzzy" in line:
                entry["fuzzy"] = "1"
            elif match := PO_FIELD.match(line):
                field = match.group(1)
                entry[field] = ast.literal_eval(match.group(2))
            elif line.startswith('"') and field:
                entry[field] += ast.literal_eval(line)
        if entry.get("msgid"):
            entries.append(entry)
    return entries


def translations(entry: dict[str, str]) -> list[str]:
    return [v for k, v in sorted(entry.items()) if k.startswith("msgstr")]


def test_it_translates_every_message():
    entries = po_entries()

    unfinished = [e["msgid"] for e in entries if e.get("fuzzy") or not all(translations(e))]
    assert len(entries) > 300 and unfinished == []


def test_it_has_compiled_the_catalog_it_ships():
    """django.mo is committed: it must say what django.po says (compilemessages after editing)."""
    mo_bytes = (CATALOG / "django.mo").read_bytes()
    compiled = gettext.GNUTranslations((CATALOG / "django.mo").open("rb"))
    entries = po_entries()

    stale = []
    for e in entries:
        ctxt, msgid = e.get("msgctxt"), e["msgid"]
        if "msgid_plural" in e:
            plural = e["msgid_plural"]
            got = [
                compiled.npgettext(ctxt, msgid, plural, n) if ctxt else compiled.ngettext(msgid, plural, n)
                for n in (1, 2)
            ]
            expected = [e["msgstr[0]"], e["msgstr[1]"]]
        else:
            got = [compiled.pgettext(ctxt, msgid) if ctxt else compiled.gettext(msgid)]
            expected = [e["msgstr"]]
        if got != expected:
            stale.append(msgid)
    (count,) = struct.unpack("<I", mo_bytes[8:12])  # the .mo header: magic, revision, count
    assert stale == [] and count == len(entries) + 1  # + the header entry


def source_messages() -> set[tuple[str | None, str]]:
    """(context, msgid) of every translator call with literal arguments in automedia's code."""
    found = set()
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" not in path.parts:
                found |= _calls(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _calls(tree: ast.AST) -> set[tuple[str | None, str]]:
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        args = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if node.func.id in TRANSLATORS and args and isinstance(args[0], str):
            found.add((None, args[0]))
        elif (
            node.func.id in CONTEXT_TRANSLATORS
            and len(args) > 1
            and all(isinstance(a, str) for a in args[:2])
        ):
            found.add((args[0], args[1]))
    return found


def test_it_has_every_message_of_the_code_in_the_catalog():
    catalog = {(e.get("msgctxt"), e["msgid"]) for e in po_entries()}

    missing = sorted(
        (m for m in source_messages() - catalog if JAPANESE.search(m[1])), key=lambda m: (m[0] or "", m[1])
    )
    assert len(source_messages()) > 300 and missing == []


def labels() -> list[tuple[str, str]]:
    """(where, text) of every app, model, field, choice and admin label, as English shows them."""
    found = []
    for config in apps.get_app_configs():
        if config.name in APPS:
            found.append((config.label, str(config.verbose_name)))
            for model in config.get_models():
                found += _model_labels(model)
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label in APPS:
            found += _admin_labels(model_admin)
    return found


def _model_labels(model) -> list[tuple[str, str]]:
    name, opts = model.__name__, model._meta
    found = [(name, str(opts.verbose_name)), (name, str(opts.verbose_name_plural))]
    for field in opts.get_fields():
        if hasattr(field, "verbose_name"):
            where = f"{name}.{field.name}"
            found += [(where, str(field.verbose_name)), (where, str(field.help_text))]
            found += [(where, str(label)) for _, label in field.flatchoices or []]
    return found


def _admin_labels(model_admin) -> list[tuple[str, str]]:
    where = type(model_admin).__name__
    found = [(where, str(title)) for title, _ in model_admin.fieldsets or [] if title]
    found += [(where, str(i.verbose_name_plural)) for i in model_admin.inlines if i.verbose_name_plural]
    found += [(where, str(f.title)) for f in model_admin.list_filter if isinstance(f, type)]
    for name in [*model_admin.list_display, *(model_admin.actions or [])]:
        attribute = getattr(model_admin, name, None) if isinstance(name, str) else name
        if hasattr(attribute, "short_description"):
            found.append((where, str(attribute.short_description)))
    return found


def _still_japanese(text: str) -> bool:
    for name in BACKLOG_NAMES:
        text = text.replace(name, "")
    return bool(JAPANESE.search(text))


def test_it_has_english_for_every_label_of_the_admin():
    with translation.override("en"):
        english = labels()

    assert len(english) > 500
    assert [(where, text) for where, text in english if _still_japanese(text)] == []


def test_it_keeps_the_japanese_labels_in_japanese():
    with translation.override("ja"):
        japanese = labels()

    assert ("ContentTask", "コンテンツ課題") in japanese and ("LinePushItem.status", "承認待ち") in japanese
    assert ("linepush", "LINE グループ投稿") in japanese


@pytest.mark.django_db
def test_translated_labels_need_no_migration():
    """The labels are the same Japanese text wrapped for translation: migrations must not see a change."""
    with translation.override("en"):
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)
