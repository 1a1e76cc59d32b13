"""The preview page: LINE-style bubbles, audience, due time, quiet-hours verdict, raw JSON one click away."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
import time_machine

from automedia_site.timeutil import JST
from console.preview import bubble
from deliveries.models import Tenant
from tests.backlog_bridge.test_lifecycle import body
from tests.console.helpers import mirrored_issue, task_url

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
BANNER = "https://example.jp/banner.png"


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


def with_banner() -> str:
    return body() + f"\n## 添付\n- 画像: {BANNER}\n"


def test_it_draws_the_messages_as_chat_bubbles(as_manager, fake_backlog, pump, tenant, template, contacts):
    task = mirrored_issue(fake_backlog, pump, tenant, description=with_banner())

    response = as_manager.get(task_url("preview", task))

    page = response.content.decode()
    assert response.status_code == 200
    assert '<div class="am-bubble" data-kind="text">' in page
    assert "2026-12-10 の営業時間は 7:00-18:00 です" in page
    assert f'<img src="{BANNER}"' in page
    assert "3 人に配信" in page  # 3 active contacts without opt_out, not blocked
    assert "2026-12-10 10:00:00（承認すると予約されます）" in page
    assert "対象外（配信できる時間です）" in page


def test_it_keeps_the_raw_json_one_click_away(as_manager, fake_backlog, pump, tenant, template, contacts):
    task = mirrored_issue(fake_backlog, pump, tenant)

    page = as_manager.get(task_url("preview", task)).content.decode()

    start = page.index('<details class="am-json" id="preview-json">')
    raw = page[page.index("<pre>", start) + 5 : page.index("</pre>", start)]
    messages = json.loads(raw.replace("&quot;", '"').replace("&#x27;", "'"))
    assert messages == [{"type": "text", "text": "2026-12-10 の営業時間は 7:00-18:00 です"}]


def test_it_shows_the_quiet_hours_verdict(as_manager, fake_backlog, pump, tenant, template, contacts):
    Tenant.objects.filter(pk=tenant.pk).update(
        quiet_hours={"enabled": True, "ranges": [{"from": "09:00", "to": "11:00"}]}
    )
    task = mirrored_issue(fake_backlog, pump, tenant)

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'class="am-quiet-inside"' in page and "静粛時間帯" in page


def test_it_names_the_problems(as_manager, fake_backlog, pump, tenant, template, contacts):
    task = mirrored_issue(fake_backlog, pump, tenant, description=body(template="missing@r9"))

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'id="preview-problems"><ul class="am-errors">' in page and "missing" in page


def test_it_says_when_backlog_no_longer_has_the_issue(as_manager, fake_backlog, pump, tenant, template):
    task = mirrored_issue(fake_backlog, pump, tenant)
    fake_backlog.delete_issue(task.issue_key)

    page = as_manager.get(task_url("preview", task)).content.decode()

    assert 'id="preview-error"' in page and "Backlog にこの課題がありません" in page


def test_it_says_when_backlog_cannot_be_read(as_manager, fake_backlog, pump, tenant, template):
    task = mirrored_issue(fake_backlog, pump, tenant)
    fake_backlog.fail_next(503, count=10)

    response = as_manager.get(task_url("preview", task))

    assert response.status_code == 200
    assert "Backlog から課題を読めませんでした" in response.content.decode()


def test_it_draws_a_carousel_as_cards():
    drawn = bubble(
        {
            "type": "template",
            "altText": "新作のご案内",
            "template": {
                "type": "carousel",
                "columns": [
                    {
                        "thumbnailImageUrl": "https://example.jp/a.png",
                        "title": "A",
                        "text": "一枚目",
                        "actions": [{"label": "詳しく"}],
                    },
                    {"title": "B", "text": "二枚目", "actions": []},
                ],
            },
        }
    )

    assert drawn["kind"] == "cards" and drawn["alt"] == "新作のご案内"
    assert [c["title"] for c in drawn["cards"]] == ["A", "B"]
    assert (
        drawn["cards"][0]["actions"] == ["詳しく"]
        and drawn["cards"][0]["image"] == "https://example.jp/a.png"
    )


def test_it_draws_the_texts_of_a_flex_message():
    drawn = bubble(
        {
            "type": "flex",
            "altText": "お知らせ",
            "contents": {
                "type": "bubble",
                "body": {"type": "box", "contents": [{"type": "text", "text": "本日 18 時から"}]},
            },
        }
    )

    assert (drawn["kind"], drawn["texts"]) == ("flex", ["本日 18 時から"])


def test_it_draws_quick_replies_and_never_an_unsafe_url():
    drawn = bubble(
        {
            "type": "image",
            "originalContentUrl": "javascript:alert(1)",
            "quickReply": {"items": [{"type": "action", "action": {"type": "message", "label": "参加する"}}]},
        }
    )

    assert drawn["src"] == "" and drawn["quick_replies"] == ["参加する"]
