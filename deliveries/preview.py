"""What a task will send, exactly: the preview of `/automedia preview` (and the admin)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from backlog_bridge.audience import AudienceError
from backlog_bridge.body.task import ParsedTask
from core.models import Tenant
from core.quiet_hours import QuietVerdict, quiet_hours_apply
from core.timeutil import fmt_jst
from deliveries.approval_checks import ApprovalChecks, approval_check
from deliveries.channels import posts as publishers
from deliveries.channels.hubspot import publisher as hubspot
from deliveries.channels.line.publisher import audience_plan
from deliveries.channels.models import ChannelAccount
from deliveries.channels.platform import PlatformError
from deliveries.channels.tiktok import choices as tiktok_choices
from deliveries.delivery import DeliveryFailed, delivery_render
from deliveries.issues import IssueState
from deliveries.models import CHANNEL_LABELS, ContentTask, DeliverySchedule
from deliveries.review import review_messages
from deliveries.services import schedule_due_at

KIND_LABELS = {
    "image": "画像の投稿",
    "reel": "リール",
    "carousel": "カルーセル",
    "video": "動画",
    "photo": "写真",
    "note": "CRM ノート",
    "email": "マーケティングメール（single-send）",
}
FIELD_LABELS = {
    "caption": "キャプション",
    "title": "タイトル",
    "body": "本文",
    "description": "説明",
    "image_url": "画像",
    "video_url": "動画",
    "cover_url": "カバー画像",
    "items": "カルーセルの画像・動画",
    "photo_urls": "写真",
    "alt_text": "代替テキスト",
    "privacy_level": "公開範囲",
    "share_to_feed": "フィードにも表示",
    "disable_comment": "コメントを無効にする",
    "disable_duet": "デュエットを無効にする",
    "disable_stitch": "スティッチを無効にする",
    "brand_organic_toggle": "自社ブランドの宣伝",
    "brand_content_toggle": "ブランドコンテンツ（他社との有償パートナーシップ）",
    "auto_add_music": "音楽を自動で付ける",
    "video_cover_timestamp_ms": "カバーにする位置（ミリ秒）",
    "photo_cover_index": "カバーにする写真（0 始まり）",
    "email_id": "HubSpot のメールID",
    "custom_properties": "カスタムプロパティ",
}
PRIVACY_LABELS = {
    "PUBLIC_TO_EVERYONE": "全員に公開",
    "MUTUAL_FOLLOW_FRIENDS": "相互フォローの友達",
    "FOLLOWER_OF_CREATOR": "フォロワー",
    "SELF_ONLY": "自分のみ（非公開）",
}


@dataclass
class Preview:
    messages: list[dict] = field(default_factory=list)
    recipients: int | None = 0  # None: not a count (an Instagram / TikTok post, or not known)
    requests: int = 0
    channel: str = "line"
    post: dict | None = None  # the Instagram / TikTok / HubSpot content exactly as it will be sent
    account: str = ""  # which account of the tenant publishes it
    audience: str = ""  # who receives it, in words (channels other than LINE)
    due_at: datetime | None = None
    scheduled: bool = False
    quiet: QuietVerdict | None = None
    problems: list[str] = field(default_factory=list)
    review: object | None = None
    checks: ApprovalChecks | None = None  # what an approval now would check (LINE validate, quota, rules)


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
    if state.parsed.channel in publishers.CHANNELS:
        _channel_post(preview, tenant, state.parsed, override or {}, now)
    else:
        _line_messages(preview, tenant, state.parsed, override)
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
    if preview.channel == "line":  # a platform post's rule problems are already post_check's
        preview.problems += [p for p in preview.checks.problems if p not in preview.problems]
    elif preview.channel == "tiktok":
        _tiktok_lines(preview, parsed)


def _tiktok_lines(preview: Preview, parsed: ParsedTask) -> None:
    """The creator (nickname, the privacy levels creator_info allows) and the body's choices."""
    rules = f"{CHANNEL_LABELS['tiktok']} の投稿ルール"
    checks = preview.checks
    preview.problems += [p for p in checks.problems if not p.startswith(rules) and p not in preview.problems]
    if preview.post is not None and not tiktok_choices.missing_choices(parsed.tiktok, preview.post["type"]):
        # The post as the init sends it: the template's fields and exactly the body's choices.
        preview.post = {**preview.post, **tiktok_choices.post_info(preview.post, parsed.tiktok)}
    stated = tiktok_choices.choices_text(parsed.tiktok) or "配信メタに公開範囲などの指定なし"
    preview.audience = f"{stated}。TikTok への投稿は宛先を選ばないため、人数は数えません"
    if checks.creator is not None:
        preview.account = f"{tiktok_choices.creator_name(checks.creator)}（{preview.account}）"
        levels = tiktok_choices.levels_text(list(checks.creator.get("privacy_level_options") or []))
        preview.audience += f"。このクリエイターが使える公開範囲: {levels}"


def _line_messages(preview: Preview, tenant: Tenant, parsed: ParsedTask, override: dict | None) -> None:
    try:
        preview.messages = delivery_render(tenant=tenant, parsed=parsed, override=override)
    except DeliveryFailed as exc:
        preview.problems.append(exc.reason)
    if (parsed.channel or "line") != "line":
        return
    try:
        plan = audience_plan(tenant=tenant, expression=(override or {}).get("audience") or parsed.audience)
        preview.requests = len(plan)
        preview.recipients = sum(1 if kind == "push" else len(to) for kind, to in plan)
    except DeliveryFailed as exc:
        preview.problems.append(exc.reason)


def _channel_post(
    preview: Preview, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime
) -> None:
    """One post: the content, the account that publishes it, and who will see it (no LINE contacts)."""
    channel = preview.channel = parsed.channel
    content, problems = publishers.post_check(
        tenant=tenant, channel=channel, parsed=parsed, override=override, now=now
    )
    preview.problems += problems
    if content is not None:
        preview.post, preview.messages = content, [publishers.post_message(channel, content)]
    account = ChannelAccount.objects.filter(tenant=tenant, channel=channel).first()
    preview.account = _account_text(account)
    preview.recipients = None
    if channel == "instagram":
        preview.audience = (
            "アカウントのフォロワーなど（Instagram への投稿は宛先を選ばずに公開されるため、人数は数えません）"
        )
    elif channel == "tiktok":
        pass  # said once the approval-time checks asked creator_info (_tiktok_lines)
    else:
        _hubspot_audience(preview, account, override.get("audience") or parsed.audience)


def _account_text(account: ChannelAccount | None) -> str:
    if account is None:
        return "未設定"
    handle = {"instagram": f"ig_user_id {account.ig_user_id}", "tiktok": f"open_id {account.open_id}"}
    return handle.get(account.channel, f"モード: {account.get_hubspot_mode_display()}")


def _hubspot_audience(preview: Preview, account: ChannelAccount | None, expression: str) -> None:
    """HubSpot's contacts matching the 対象タグ, counted from the contacts API (read only)."""
    if account is None or account.token_invalid_at is not None or not expression:
        preview.audience = f"HubSpot のコンタクト（対象タグ: {expression or 'なし'}）。アカウントか対象タグが使えないため件数は数えていません"
        return
    where = f"（対象タグ: {expression}、プロパティ {account.hubspot_tag_property}）"
    try:
        count = hubspot.audience_count(account=account, expression=expression)
    except AudienceError as exc:
        preview.problems.append(f"対象タグを解釈できません: {exc}")
        preview.audience = f"HubSpot のコンタクト{where}"
        return
    except PlatformError as exc:
        preview.audience = (
            f"HubSpot のコンタクト{where}。件数を HubSpot から取得できませんでした（{exc.message}）"
        )
        return
    preview.recipients = count.matched
    if count.matched == 0 and count.complete:
        preview.problems.append(f"対象者がいません（HubSpot のコンタクト、対象タグ: {expression}）")
    more = "" if count.complete else " 以上（途中まで数えました）"
    preview.audience = f"HubSpot のコンタクト {count.matched:,} 件{more}{where}"
    if account.hubspot_mode == ChannelAccount.HubSpotMode.EMAIL:
        preview.audience += "に 1 通ずつメールを送信"
        if count.without_email:
            preview.audience += f"。メールアドレスのない {count.without_email:,} 件には送られません"
    else:
        preview.audience += "に CRM ノート 1 件を関連付け"


def post_fields(content: dict, *, leave_out: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The post's fields for people, labelled in Japanese, in the template's order."""
    return [
        (FIELD_LABELS.get(key, key), _field_text(key, value))
        for key, value in content.items()
        if key not in ("type", *leave_out)
    ]


def post_kind(channel: str, content: dict) -> str:
    return (
        f"{CHANNEL_LABELS.get(channel, channel)} {KIND_LABELS.get(content.get('type'), content.get('type'))}"
    )


def _field_text(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "はい" if value else "いいえ"
    if key == "privacy_level":
        return f"{value}（{PRIVACY_LABELS.get(str(value), '不明')}）"
    if isinstance(value, list):
        return "\n".join(f"{n}. {_field_text(key, v)}" for n, v in enumerate(value, 1))
    if isinstance(value, dict):
        return "、".join(f"{k}: {v}" for k, v in value.items())
    return str(value)


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
    if preview.channel != "line":
        lines.append(f"- チャネル: {CHANNEL_LABELS[preview.channel]}（アカウント: {preview.account}）")
    lines.append(f"- 配信予定: {_due(preview)}")
    lines.append(
        f"- 静粛時間帯: {preview.quiet.message if preview.quiet and preview.quiet.inside else '対象外'}"
    )
    if preview.channel != "line":
        lines.append(f"- 配信先: {preview.audience}")
    else:
        lines.append(f"- 配信先: {preview.recipients} 件（LINE への送信 {preview.requests} 回）")
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
