"""Instagram at approval: the rolling publishing limit counted at the post's time, new fields
kept out of the container, and the container's status read before any second media_publish."""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import partial

import pytest

from core.timeutil import JST
from deliveries.channels.models import ChannelPost
from deliveries.models import DeliverySchedule
from tests.helpers.backlog import texts
from tests.helpers.channels import channel_approve, channel_body
from tests.helpers.deliveries import DUE, fire, scheduled
from tests.helpers.factories import ContentTaskFactory

pytestmark = pytest.mark.usefixtures("ig_account")

APPROVED = datetime(2026, 12, 1, 9, 0, tzinfo=JST)
REFUSED = "[automedia] 承認時の確認で問題が見つかったため配信を予約できません。"
PUBLISH = "/v25.0/17841400000000001/media_publish"


@pytest.fixture
def approve_instagram(fake_backlog, tenant, pump):
    """Approve an Instagram issue at 2026-12-01 09:00 JST (APPROVED); returns its key."""
    return partial(channel_approve, fake_backlog, pump, tenant, "instagram")


def other_posts(tenant, *due_times: datetime) -> None:
    """Instagram approvals automedia already scheduled, one per due time."""
    for n, due in enumerate(due_times):
        task = ContentTaskFactory(tenant=tenant, issue_key=f"OTHER-{n + 1}", channel="instagram")
        DeliverySchedule.objects.create(
            tenant=tenant, task=task, name=f"other-{n}", due_at=due, reason="approval"
        )


def published(tenant, *times: datetime) -> None:
    for n, at in enumerate(times):
        task = ContentTaskFactory(tenant=tenant, issue_key=f"DONE-{n + 1}", channel="instagram")
        ChannelPost.objects.create(
            tenant=tenant, task=task, approval_seq=0, channel="instagram", phase="done", published_at=at
        )


def test_it_refuses_an_approval_that_would_exceed_the_limit_at_its_time(
    approve_instagram, fake_backlog, tenant
):
    other_posts(tenant, *(DUE - timedelta(minutes=10 * n) for n in range(1, 51)))

    key = approve_instagram()

    assert not scheduled(key)
    comment = texts(fake_backlog, key)[-1]
    assert comment.startswith(REFUSED)
    assert (
        "Instagram の投稿枠を超えます: 2026-12-10 10:00:00 (JST) までの 24 時間の投稿が 51 件になります"
        in comment
    )
    assert "（上限 50 件、この承認を含む）" in comment


def test_it_counts_the_posts_meta_reports_while_the_window_reaches_back_before_now(
    approve_instagram, fake_backlog, tenant, instagram
):
    instagram.quota_usage = 49  # posts of the last 24 h, automedia's one among them
    published(tenant, APPROVED - timedelta(hours=2))  # one of them is automedia's
    other_posts(tenant, APPROVED + timedelta(hours=1))
    body = channel_body("instagram").replace("2026-12-10 10:00", "2026-12-01 12:00")

    key = approve_instagram(body=body)

    assert not scheduled(key)
    assert (
        "2026-12-01 12:00:00 (JST) までの 24 時間の投稿が 51 件になります（上限 50 件"
        in (texts(fake_backlog, key)[-1])
    )


def test_it_refuses_an_approval_that_would_push_a_later_post_over_the_limit(
    approve_instagram, fake_backlog, tenant
):
    later = DUE + timedelta(hours=1)
    other_posts(tenant, later, *(DUE - timedelta(minutes=10 * n) for n in range(1, 50)))

    key = approve_instagram()

    assert not scheduled(key)
    assert "2026-12-10 11:00:00 (JST) までの 24 時間の投稿が 51 件になります" in texts(fake_backlog, key)[-1]


def test_an_approval_within_the_limit_says_the_count(approve_instagram, fake_backlog, tenant):
    other_posts(tenant, DUE - timedelta(hours=1), DUE - timedelta(hours=25))

    key = approve_instagram()

    assert scheduled(key)
    assert (
        "Instagram の投稿枠: 2026-12-10 10:00:00 (JST) までの 24 時間で 2 / 50 件"
        in texts(fake_backlog, key)[-1]
    )


def test_it_keeps_fields_instagram_added_out_of_the_container(approve_instagram, instagram):
    key = approve_instagram()

    assert fire(key) == "delivered"

    [create] = [r for r in instagram.calls() if r.method == "POST" and r.path.endswith("/media")]
    assert set(create.body) == {"image_url", "caption"}  # no is_ai_generated nor any other new field


def test_a_template_asking_for_is_ai_generated_is_refused(approve_instagram, fake_backlog):
    content = {"type": "image", "image_url": "https://cdn.example.jp/{{ image }}", "is_ai_generated": True}

    key = approve_instagram(content=content)

    assert not scheduled(key)
    assert (
        "is_ai_generated は instagram の image テンプレートでは使えない項目です"
        in texts(fake_backlog, key)[-1]
    )


def test_after_an_unclear_publish_the_status_is_read_before_any_second_publish(approve_instagram, instagram):
    key = approve_instagram()
    instagram.fail_graph(
        2, "Service temporarily unavailable", status=500, transient=True, path_prefix=PUBLISH
    )

    assert fire(key) == "retry in 30s"
    assert fire(key) == "delivered"

    steps = [
        "publish" if r.path.endswith("/media_publish") else "status"
        for r in instagram.calls()
        if r.path.endswith("/media_publish") or "status_code" in str(r.query)
    ]
    first_publish = steps.index("publish")
    assert steps[first_publish:] == ["publish", "status", "publish"]
    assert len(instagram.published()) == 1 and instagram.double_publishes == 0
