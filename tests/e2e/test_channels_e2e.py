"""Instagram, TikTok and HubSpot deliveries through automedia's real processes.

One Stack for the module (sandbox/stack.py: gunicorn, a qcluster, run_scheduler
on a throwaway database; the fake Backlog, Instagram, TikTok and HubSpot in this process).
Each test: a manager writes an issue for one channel due a few seconds ahead and moves it to
automedia承認 (webhooks); it must end published exactly once on the fake platform and written
back to Backlog in one PATCH that names the post.

Instagram containers and TikTok uploads are processed asynchronously: automedia reads their
state, and while it is not ready gives the schedule row back with a later due time (Instagram
60 s, Meta's advice; TikTok 15 s first), never sleeping in a worker. These intervals are
constants of the publishers, not settings, so to keep the test short it checks the row was
given back with that interval, then moves the row's due time to now: run_scheduler claims the
same row again and a worker re-checks it, as it would a minute later. (The intervals
themselves are tested with time-machine in tests/deliveries/channels/<kind>/test_channel.py.)
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from sandbox.stack import Stack, StackError
from sandbox.tiktok import VIDEO_INIT
from tests.helpers.stack import (
    DISPATCHED,
    PROJECT,
    patches,
    reserved_for,
    running_stack,
    start_schedulers,
    start_workers,
    successful_patches,
    whole_seconds_from_now,
)

pytestmark = pytest.mark.e2e

LEAD_SECONDS = 6  # 投稿日時, from the approval
DELIVER_TIMEOUT = 30.0
IG_MEDIA = "/v25.0/{ig}/media"
TIKTOK_STATUS = "/v2/post/publish/status/fetch/"
# An audited app's public post (a SELF_ONLY post has no public post id): the template
# imported in the stack as `public_release`, and the issue's choices (配信メタ).
TIKTOK_PUBLIC = {
    "type": "video",
    "title": "{{ date }} 公開「{{ title }}」",
    "video_url": "{{ video_url }}",
}
TIKTOK_CHOICES = "- 公開範囲: PUBLIC_TO_EVERYONE\n- コメント: 許可\n- デュエット: 不可\n- スティッチ: 不可\n- 商用コンテンツ: なし\n- 音楽利用確認: 同意\n"
CONTACTS = [("fan1@example.jp", ["active"]), ("fan2@example.jp", ["active", "vip"])]
OTHERS = [("fan3@example.jp", ["active", "opt_out"]), ("fan4@example.jp", ["inactive"])]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("channels")
    with running_stack(tmp) as stack:
        stack.add_channel_accounts(tiktok_privacy=("PUBLIC_TO_EVERYONE", "SELF_ONLY"))
        folder = tmp / "tiktok"
        folder.mkdir()
        (folder / "public_release.json").write_text(json.dumps(TIKTOK_PUBLIC), encoding="utf-8")
        [imported] = stack.call_commands([["import_templates", str(folder), "--channel", "tiktok"]])
        stack.channel_templates["tiktok"]["public_release"] = imported.split("@")[1].split()[0]
        for email, tags in CONTACTS + OTHERS:
            stack.hubspot.add_contact(email, tags)
        start_workers(stack, "worker-1")
        start_schedulers(stack, "sched-1")
        yield stack


@contextlib.contextmanager
def logs_on_failure(stack: Stack) -> Iterator[None]:
    """The module's stack outlives a failed test: print its logs with the failure."""
    try:
        yield
    except BaseException:
        stack.print_logs()
        raise


# -- issues ------------------------------------------------------------------------------


def approve(stack: Stack, channel: str, template: str, variables: dict[str, str]) -> tuple[str, datetime]:
    """A manager writes an issue for `channel` due LEAD_SECONDS ahead and approves it."""
    label = {"instagram": "Instagram", "tiktok": "TikTok", "hubspot": "HubSpot"}[channel]
    publish_at = whole_seconds_from_now(LEAD_SECONDS)
    description = (
        "## 配信メタ\n"
        f"- チャネル: {label}\n"
        f"- 投稿日時: {publish_at:%Y-%m-%d %H:%M:%S} (JST)\n"
        "- 対象タグ: tag:active, !tag:opt_out\n"
        f"- テンプレ: {template}@{stack.channel_templates[channel][template]}\n"
        + (TIKTOK_CHOICES if channel == "tiktok" else "")
        + "\n## 文面 / 変数\n"
        + "".join(f"- {k}: {v}\n" for k, v in variables.items())
    )
    issue = stack.backlog.create_issue(
        PROJECT, summary=f"{label} 新作告知", description=description, status="処理中"
    )
    stack.backlog.update_issue(issue["issueKey"], status="automedia承認")
    stack.wait_for(lambda: reserved_for(stack, issue["issueKey"]), 8, message="the reservation comment")
    return issue["issueKey"], publish_at


def recheck_now(stack: Stack, key: str, *, checked_at: float, interval: float) -> dict:
    """Once the worker gave the row back to wait for the platform, assert it did so for
    `interval` seconds after the status read at `checked_at`, and make it due now."""
    code = (
        "import json\n"
        "from django.utils import timezone\n"
        "from deliveries.models import DeliverySchedule as S\n"
        f"s = S.objects.get(task__issue_key={key!r})\n"
        "moved = S.objects.filter(pk=s.pk, lease_until__isnull=True, due_at=s.due_at, stage='deliver')"
        ".update(due_at=timezone.now())\n"
        "print(json.dumps({'moved': moved, 'due_at': s.due_at.timestamp(), 'attempts': s.attempts,"
        " 'last_error': s.last_error}))"
    )
    deadline = time.monotonic() + 15
    while True:
        row = json.loads(stack.shell(code))
        if row["moved"] == 1:
            break
        if time.monotonic() > deadline:
            raise StackError(f"the schedule of {key} was not given back to wait: {row}")
    assert interval - 1.0 <= row["due_at"] - checked_at <= interval + 2.0
    assert row["attempts"] == 0  # a wait for the platform is not a retry
    return row


def the_write_back(stack: Stack, key: str) -> str:
    """The one PATCH of the issue (accepted), to 実行済み; returns its comment."""
    stack.wait_for(lambda: successful_patches(stack, key), DELIVER_TIMEOUT, message="the write-back PATCH")
    [patch] = patches(stack, key)
    assert patch.status == 200
    assert patch.form["statusId"] == [str(stack.backlog.status_id(PROJECT, "automedia実行済み"))]
    assert stack.backlog.issue(key)["status"]["name"] == "automedia実行済み"
    comment = patch.form["comment"][0]
    assert comment.startswith(DISPATCHED)
    return comment


def first_call_lateness(calls: list, publish_at: datetime) -> float:
    lateness = calls[0].received_at - publish_at.timestamp()
    print(f"\nthe first platform call came {lateness:.2f}s after due_at")
    return lateness


# -- the tests ---------------------------------------------------------------------------


def test_an_approved_instagram_post_has_its_container_made_ahead_and_goes_out_at_its_second(stack: Stack):
    ig = stack.instagram
    ig.processing_polls = 1  # the first status read says IN_PROGRESS
    media_path = IG_MEDIA.format(ig=ig.ig_user_id)
    with logs_on_failure(stack):
        key, publish_at = approve(
            stack,
            "instagram",
            "new_release",
            {"date": "2026-12-10", "title": "冬の新作", "image_url": "https://cdn.example.jp/winter.jpg"},
        )
        comment = the_write_back(stack, key)

    due = publish_at.timestamp()
    [made] = [r for r in ig.calls(media_path, "POST") if r.path == media_path]  # one container
    reads = status_reads(ig)
    assert made.received_at < due and all(r.received_at < due for r in reads)  # prepared ahead
    assert [r.response["status_code"] for r in reads] == ["IN_PROGRESS", "FINISHED"]
    [publish] = ig.publish_calls()
    print(f"\nmedia_publish came {publish.received_at - due:.2f}s after due_at")
    assert publish.received_at >= due and ig.double_publishes == 0  # never before its second
    [media] = ig.published()
    assert media["params"]["image_url"] == "https://cdn.example.jp/winter.jpg"
    assert f"投稿ID: {media['id']}" in comment and f"パーマリンク: {media['permalink']}" in comment


def status_reads(ig) -> list:
    """Reads of a container's status_code (GET /{v}/{container-id})."""
    return [r for r in ig.calls(method="GET") if r.path.rsplit("/", 1)[-1] in ig.containers]


def test_an_approved_tiktok_task_is_published_once_after_its_upload_is_rechecked(stack: Stack):
    tt = stack.tiktok
    with logs_on_failure(stack):
        key, publish_at = approve(
            stack,
            "tiktok",
            "public_release",
            {"date": "2026-12-10", "title": "冬の新作", "video_url": "https://cdn.example.jp/winter.mp4"},
        )

        stack.wait_for(
            lambda: tt.calls(TIKTOK_STATUS), LEAD_SECONDS + 10, message="the upload's first status fetch"
        )
        recheck_now(stack, key, checked_at=tt.calls(TIKTOK_STATUS)[0].received_at, interval=15)
        comment = the_write_back(stack, key)

        # creator_info is asked at approval and again ahead of the second; the post itself
        # (the init) never goes before it.
        assert first_call_lateness(tt.calls(VIDEO_INIT), publish_at) >= 0.0
        [publish] = tt.inits()
        assert publish.status == "PUBLISH_COMPLETE" and publish.post_id
        assert len(tt.calls(TIKTOK_STATUS)) == 2  # PROCESSING_DOWNLOAD, then PUBLISH_COMPLETE
        assert f"publish_id: {publish.publish_id}" in comment and f"投稿ID: {publish.post_id}" in comment
        assert f"URL: https://www.tiktok.com/@automedia_demo/video/{publish.post_id}" in comment


def test_an_approved_hubspot_task_creates_one_note_on_the_audiences_contacts(stack: Stack):
    hs = stack.hubspot
    with logs_on_failure(stack):
        before = len(hs.calls())  # add_channel's connection check came first
        key, publish_at = approve(
            stack, "hubspot", "new_release_note", {"date": "2026-12-10", "title": "冬の新作"}
        )

        comment = the_write_back(stack, key)

        assert first_call_lateness(hs.calls()[before:], publish_at) >= 0.0
        [(note_id, note)] = hs.notes.items()
        assert note["properties"]["hs_note_body"].startswith(
            "<p>2026-12-10 に「冬の新作」の告知を配信しました。</p>"
        )
        audience = {cid for cid, c in hs.contacts.items() if c["properties"]["email"] in dict(CONTACTS)}
        assert hs.associations[note_id] == audience
        assert f"ノートID: {note_id}" in comment and "関連付けたコンタクト: 2 件" in comment
