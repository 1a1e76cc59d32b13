"""Japanese by default (Django's admin and ours), English when the browser asks; times in Asia/Tokyo."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from tests.factories import ContentTaskFactory

pytestmark = pytest.mark.django_db


def test_it_speaks_japanese_by_default(as_manager):
    page = as_manager.get(reverse("admin:index")).content.decode()

    assert '<html lang="ja"' in page
    assert "automedia 管理" in page and "ダッシュボード" in page and "今日の配信予約" in page
    assert "ログアウト" in page  # Django's own admin translation


def test_it_speaks_english_when_the_browser_asks(as_manager):
    page = as_manager.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="en-US,en;q=0.9").content.decode()

    assert '<html lang="en"' in page
    assert "automedia admin" in page and "Today's scheduled deliveries" in page and "Log out" in page


def test_it_falls_back_to_japanese_for_other_languages(as_manager):
    page = as_manager.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="fr").content.decode()

    assert '<html lang="ja"' in page


def test_it_shows_times_in_tokyo(as_manager, tenant):
    ContentTaskFactory(tenant=tenant, publish_at=datetime(2026, 12, 10, 1, 0, tzinfo=UTC), summary="告知")

    page = as_manager.get(reverse("admin:deliveries_contenttask_changelist")).content.decode()

    assert "2026年12月10日10:00" in page.replace(" ", "")


def test_it_has_compiled_every_english_translation():
    """locale/en/…/django.mo is committed: it must match the .po (run compilemessages after editing)."""
    po = (Path(__file__).resolve().parents[2] / "locale/en/LC_MESSAGES/django.po").read_text(encoding="utf-8")
    singles = re.findall(r'^msgid ((?:".*"\n)+)msgstr ', po, re.M)
    msgids = ["".join(re.findall(r'"(.*)"', block)).replace('\\"', '"') for block in singles]
    with translation.override("en"):
        untranslated = [m for m in msgids if m and m.isascii() is False and translation.gettext(m) == m]
    assert len(msgids) > 100 and untranslated == []
