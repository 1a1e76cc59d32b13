"""What every channel's preview shares: the preview it fills in, and the post of the
channels that publish one post from the tenant's account, in words for people.

Each channel's `preview` module answers `fill(preview, …)` (what it will send, from which
account, to whom), `checked(preview, parsed)` (what the approval-time checks add) and
`target(audience)` (who a send reaches, for the reply of `/automedia send`);
deliveries/approve/preview.py builds the rest (when, quiet hours, the review, the comment).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from backlog_bridge.body.task import ParsedTask
from core.channels import channel_label
from core.models import Tenant
from core.quiet_hours import QuietVerdict
from deliveries.channels.approval_base import ApprovalChecks
from deliveries.channels.models import ChannelAccount
from deliveries.channels.posts import post_check, post_message
from deliveries.channels.registry import channel_part

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
    channel: str
    messages: list[dict] = field(default_factory=list)
    recipients: int | None = 0  # None: not a count (an Instagram / TikTok post, or not known)
    requests: int = 0
    is_post: bool = False  # one post from the tenant's account of the channel, not messages to people
    post: dict | None = None  # the Instagram / TikTok / HubSpot content exactly as it will be sent
    account: str = ""  # which account of the tenant publishes it
    audience: str = ""  # who receives it, in words
    due_at: datetime | None = None
    scheduled: bool = False
    quiet: QuietVerdict | None = None
    problems: list[str] = field(default_factory=list)
    review: object | None = None
    checks: ApprovalChecks | None = None  # what an approval now would check (LINE validate, quota, rules)


def post_preview(
    preview: Preview, *, tenant: Tenant, parsed: ParsedTask, override: dict, now: datetime
) -> ChannelAccount | None:
    """An account channel's `fill`: the post, the account that publishes it (returned), no
    count of recipients unless the channel makes one."""
    channel, preview.is_post = preview.channel, True
    content, problems = post_check(tenant=tenant, channel=channel, parsed=parsed, override=override, now=now)
    preview.problems += problems
    if content is not None:
        preview.post, preview.messages = content, [post_message(channel, content)]
    account = ChannelAccount.objects.filter(tenant=tenant, channel=channel).first()
    preview.account = channel_part(channel, "account").described(account) if account is not None else "未設定"
    preview.recipients = None
    return account


def post_fields(content: dict, *, leave_out: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The post's fields for people, labelled in Japanese, in the template's order."""
    return [
        (FIELD_LABELS.get(key, key), _field_text(key, value))
        for key, value in content.items()
        if key not in ("type", *leave_out)
    ]


def post_kind(channel: str, content: dict) -> str:
    return f"{channel_label(channel)} {KIND_LABELS.get(content.get('type'), content.get('type'))}"


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
