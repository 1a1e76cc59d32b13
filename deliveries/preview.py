"""What a task will send, exactly: the preview of `/automedia preview` (and the admin)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from automedia_site.timeutil import fmt_jst
from backlog_bridge.services import IssueState
from deliveries.delivery import DeliveryFailed, audience_plan, delivery_render
from deliveries.models import DeliverySchedule, Tenant
from deliveries.quiet_hours import QuietVerdict
from deliveries.review import review_messages

MIN_LEAD = timedelta(seconds=5)


@dataclass
class Preview:
    messages: list[dict] = field(default_factory=list)
    recipients: int = 0
    requests: int = 0
    due_at: datetime | None = None
    scheduled: bool = False
    quiet: QuietVerdict | None = None
    problems: list[str] = field(default_factory=list)
    review: object | None = None


def preview_build(
    *,
    tenant: Tenant,
    issue_key: str,
    state: IssueState,
    now: datetime,
    override: dict | None = None,
    review: bool = True,
) -> Preview:
    preview = Preview(problems=[] if override else list(state.parsed.errors))
    try:
        preview.messages = delivery_render(tenant=tenant, parsed=state.parsed, override=override)
    except DeliveryFailed as exc:
        preview.problems.append(exc.reason)
    if (state.parsed.channel or "line") == "line":  # other channels: one post, no LINE contacts
        try:
            plan = audience_plan(
                tenant=tenant, expression=(override or {}).get("audience") or state.parsed.audience
            )
            preview.requests = len(plan)
            preview.recipients = sum(1 if kind == "push" else len(to) for kind, to in plan)
        except DeliveryFailed as exc:
            preview.problems.append(exc.reason)
    _when(preview, tenant, issue_key, state, now)
    if review and preview.messages:
        preview.review = review_messages(
            tenant=tenant, issue_key=issue_key, messages=preview.messages, publish_at=state.parsed.publish_at
        )
    return preview


def _when(preview: Preview, tenant: Tenant, issue_key: str, state: IssueState, now: datetime) -> None:
    schedule = DeliverySchedule.objects.filter(tenant=tenant, task__issue_key=issue_key).first()
    if schedule is not None:
        preview.due_at, preview.scheduled = schedule.due_at, True
    elif state.parsed.publish_at is not None:
        preview.due_at = max(state.parsed.publish_at, now + MIN_LEAD)
    if preview.due_at is not None:
        preview.quiet = tenant.quiet_hours_config().check(preview.due_at)


def preview_comment(preview: Preview) -> str:
    lines = ["[automedia] プレビュー（このまま送信されます）"]
    lines.append(f"- 配信予定: {_due(preview)}")
    lines.append(
        f"- 静粛時間帯: {preview.quiet.message if preview.quiet and preview.quiet.inside else '対象外'}"
    )
    lines.append(f"- 配信先: {preview.recipients} 件（LINE への送信 {preview.requests} 回）")
    lines.append(f"- 問題: {'なし' if not preview.problems else ''}")
    lines.extend(f"  - {p}" for p in preview.problems)
    for n, message in enumerate(preview.messages, start=1):
        lines.append(f"\nメッセージ {n}/{len(preview.messages)}（{message.get('type')}）:")
        lines.append(_message_text(message))
    if preview.messages:
        lines.append(
            "\n送信する JSON:\n```\n" + json.dumps(preview.messages, ensure_ascii=False, indent=2) + "\n```"
        )
    lines.extend(_review_lines(preview.review))
    return "\n".join(lines)


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
