"""What a task will send, exactly: the preview of `/automedia preview` (and the admin)."""

from __future__ import annotations

import json
from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.channels import channel_label
from core.models import Tenant
from core.quiet_hours import quiet_hours_apply
from core.timeutil import fmt_jst
from deliveries.approve.checks import approval_check
from deliveries.approve.review import review_messages
from deliveries.channels.preview_base import Preview, post_fields, post_kind
from deliveries.channels.registry import channel_part, kind_of
from deliveries.issues import IssueState
from deliveries.models import ContentTask, DeliverySchedule
from deliveries.services import schedule_due_at


def preview_build(
    *,
    tenant: Tenant,
    issue_key: str,
    state: IssueState,
    now: datetime,
    override: dict | None = None,
    review: bool = True,
) -> Preview:
    parsed = state.parsed
    preview = Preview(channel=kind_of(parsed.channel), problems=[] if override else list(parsed.errors))
    channel_part(preview.channel, "preview").fill(
        preview, tenant=tenant, parsed=parsed, override=override or {}, now=now
    )
    _when(preview, tenant, issue_key, state, now)
    _checks(preview, tenant, issue_key, state.parsed, override, now)
    if review and preview.messages:
        preview.review = review_messages(
            tenant=tenant, issue_key=issue_key, messages=preview.messages, publish_at=state.parsed.publish_at
        )
    return preview


def _checks(
    preview: Preview, tenant: Tenant, issue_key: str, parsed: ParsedTask, override: dict | None, now: datetime
) -> None:
    """The approval-time checks, as an approval now would run them (nothing is stored)."""
    preview.checks = approval_check(
        tenant=tenant,
        parsed=parsed,
        due_at=preview.due_at or now,
        now=now,
        override=override,
        task=ContentTask.objects.filter(tenant=tenant, issue_key=issue_key).first(),
    )
    channel_part(preview.channel, "preview").checked(preview, parsed)


def _when(preview: Preview, tenant: Tenant, issue_key: str, state: IssueState, now: datetime) -> None:
    schedule = DeliverySchedule.objects.filter(tenant=tenant, task__issue_key=issue_key).first()
    if schedule is not None:
        preview.due_at, preview.scheduled = schedule.due_at, True
    elif state.parsed.publish_at is not None:
        preview.due_at = schedule_due_at(publish_at=state.parsed.publish_at, now=now)
    if preview.due_at is not None:
        preview.quiet = quiet_hours_apply(quiet=tenant.quiet_hours_config(), when=preview.due_at).verdict


def preview_comment(preview: Preview) -> str:
    lines = ["[automedia] プレビュー（このまま送信されます）"]
    if preview.is_post:
        lines.append(f"- チャネル: {channel_label(preview.channel)}（アカウント: {preview.account}）")
    lines.append(f"- 配信予定: {_due(preview)}")
    lines.append(
        f"- 静粛時間帯: {preview.quiet.message if preview.quiet and preview.quiet.inside else '対象外'}"
    )
    lines.append(f"- 配信先: {preview.audience}")
    lines.append(f"- 問題: {'なし' if not preview.problems else ''}")
    lines.extend(f"  - {p}" for p in preview.problems)
    if preview.checks is not None and preview.checks.lines:
        lines.append(f"- 承認時の確認: {preview.checks.summary()}")
    if preview.post is not None:
        lines.extend(_post_lines(preview.channel, preview.post))
        lines.extend(_review_lines(preview.review))
        return "\n".join(lines)
    for n, message in enumerate(preview.messages, start=1):
        lines.append(f"\nメッセージ {n}/{len(preview.messages)}（{message.get('type')}）:")
        lines.append(_message_text(message))
    if preview.messages:
        lines.append(
            "\n送信する JSON:\n```\n" + json.dumps(preview.messages, ensure_ascii=False, indent=2) + "\n```"
        )
    lines.extend(_review_lines(preview.review))
    return "\n".join(lines)


def _post_lines(channel: str, content: dict) -> list[str]:
    lines = [f"\n投稿内容（{post_kind(channel, content)}）:"]
    for label, text in post_fields(content):
        separator = "\n" if "\n" in text else " "
        lines.append(f"{label}:{separator}{text}")
    lines.append(
        "\n送信する内容（JSON）:\n```\n" + json.dumps(content, ensure_ascii=False, indent=2) + "\n```"
    )
    return lines


def _due(preview: Preview) -> str:
    if preview.due_at is None:
        return "未定（投稿日時がありません）"
    return f"{fmt_jst(preview.due_at)}（{'予約済み' if preview.scheduled else '承認すると予約されます'}）"


def _message_text(message: dict) -> str:
    if message.get("type") == "text":
        return message.get("text", "")
    if message.get("type") == "image":
        return f"[画像] {message.get('originalContentUrl', '')}"
    return f"[{message.get('type')}] {message.get('altText', '')}".rstrip()


def _review_lines(review) -> list[str]:
    if review is None:
        return []
    header = "\n--- AI レビュー（参考情報・自動生成です。最終判断は担当者が行ってください）---"
    if not review.ok:
        return [
            header,
            f"AI レビューは取得できませんでした（{review.error or '応答なし'}）。プレビューの内容には影響しません。",
        ]
    cost = f"（{review.model}、入力 {review.input_tokens} / 出力 {review.output_tokens} トークン）"
    return [header, review.text, cost]
