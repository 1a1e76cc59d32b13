"""The one TikTok API client (Content Posting API, Direct Post; OAuth token refresh).

Every v2 answer is `{"data": {...}, "error": {"code", "message", "log_id"}}` with `code: "ok"`
on success (https://developers.tiktok.com/doc/tiktok-api-v2-error-handling). `init` returns
a `publish_id` and has no idempotency key
(https://developers.tiktok.com/doc/content-posting-api-reference-direct-post).
"""

from __future__ import annotations

from typing import Any

import httpx
from django.conf import settings

from core.transport import parse_retry_after
from deliveries.channels.platform_transport import PlatformError, PlatformTransport, json_body

CREATOR_INFO = "/v2/post/publish/creator_info/query/"
VIDEO_INIT = "/v2/post/publish/video/init/"
CONTENT_INIT = "/v2/post/publish/content/init/"
STATUS_FETCH = "/v2/post/publish/status/fetch/"
OAUTH_TOKEN = "/v2/oauth/token/"
# Effect measurement: `POST /v2/video/query/?fields=…` with `{"filters": {"video_ids": […]}}`,
# scope `video.list`, up to 20 ids, only the user's own videos
# (https://developers.tiktok.com/doc/tiktok-api-v2-video-query), 600 requests a minute
# (https://developers.tiktok.com/docs/en/tiktok-api-v2-rate-limit). Not confirmed: whether
# photo posts come back (a post that does not is reported without figures).
VIDEO_QUERY = "/v2/video/query/"
VIDEO_STATS_FIELDS = ("id", "share_url", "view_count", "like_count", "comment_count", "share_count")
# Per-token limits, from each endpoint's reference page.
PER_MINUTE = {CREATOR_INFO: 20, VIDEO_INIT: 6, CONTENT_INIT: 6, STATUS_FETCH: 30}
RATE_LIMIT_RETRY_AFTER = 60.0  # the limits are per token per minute

# Japanese context for the codes the Direct Post reference lists
# (https://developers.tiktok.com/doc/content-posting-api-reference-direct-post).
EXPLAINED = {
    "spam_risk_too_many_posts": "このアカウントの 1 日の投稿上限に達しました（TikTok の制限）。明日以降にもう一度承認してください。",
    "spam_risk_user_banned_from_posting": "このアカウントは TikTok で投稿を禁止されています。",
    "reached_active_user_cap": "TikTok アプリの 1 日あたりの利用ユーザー上限に達しました。明日以降にもう一度承認してください。",
    "unaudited_client_can_only_post_to_private_accounts": "審査前の TikTok アプリは非公開アカウントに SELF_ONLY でしか投稿できません。",
    "url_ownership_unverified": "動画・写真 URL のドメインが TikTok で所有確認されていません（PULL_FROM_URL の条件）。",
    "privacy_level_option_mismatch": "テンプレの privacy_level はこのクリエイターでは使えません。",
    "invalid_params": "TikTok がリクエスト内容を不正と判断しました。",
    "invalid_file_upload": "動画・写真が TikTok の条件を満たしていません。",
}
AUTH_CODES = {"access_token_invalid", "scope_not_authorized", "scope_permission_missed"}


def tiktok_error(response: httpx.Response) -> PlatformError:
    """Sort a TikTok error into the retry policy (core/retry.py) (match on `error.code`)."""
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    if isinstance(error, str):  # the OAuth endpoint: {"error": "invalid_grant", "error_description"}
        error = {"code": error, "message": response.json().get("error_description", "")}
    code = str(error.get("code") or "")
    status = response.status_code
    text = " ".join(
        p
        for p in (
            EXPLAINED.get(code, ""),
            f"TikTok のエラー {code or status}: {error.get('message') or response.reason_phrase}",
        )
        if p
    )
    common: dict[str, Any] = {"status": status, "request_id": str(error.get("log_id") or ""), "code": code}
    if code in AUTH_CODES or status == 401:
        return PlatformError(
            f"認証エラー: TikTok のトークンが期限切れか無効です。{text}", permanent=True, auth=True, **common
        )
    if code == "rate_limit_exceeded" or status == 429:
        retry_after = parse_retry_after(response) or RATE_LIMIT_RETRY_AFTER
        return PlatformError(f"レート制限: {text}", permanent=False, retry_after=retry_after, **common)
    if code == "internal_error" or status >= 500:
        # TikTok's own error envelope says the call failed; anything else (a gateway page) may not.
        return PlatformError(f"一時的なエラー: {text}", permanent=False, unclear=not code, **common)
    return PlatformError(text, permanent=True, **common)


class TikTokTransport(PlatformTransport):
    service = "tiktok"
    request_id_header = "x-tt-logid"

    def __init__(
        self, *, token: str = "", base_url: str | None = None, timeout: float | None = None, transport=None
    ):
        super().__init__(
            base_url=base_url or settings.TIKTOK_API_BASE_URL,
            headers={"Authorization": f"Bearer {token}"} if token else {},
            timeout=timeout or settings.PLATFORM_TIMEOUT_SECONDS,
            transport=transport,
        )

    def creator_info(self) -> dict:
        """Which privacy levels the creator may use (unaudited apps: SELF_ONLY) and the
        interactions they turned off
        (https://developers.tiktok.com/doc/content-posting-api-reference-query-creator-info/)."""
        return self._call(CREATOR_INFO, {})

    def video_init(self, *, post_info: dict, video_url: str) -> str:
        body = {"post_info": post_info, "source_info": {"source": "PULL_FROM_URL", "video_url": video_url}}
        return str(self._call(VIDEO_INIT, body)["publish_id"])

    def photo_init(self, *, post_info: dict, photo_urls: list[str], cover_index: int = 0) -> str:
        body = {
            "post_info": post_info,
            "source_info": {
                "source": "PULL_FROM_URL",
                "photo_images": photo_urls,
                "photo_cover_index": cover_index,
            },
            "post_mode": "DIRECT_POST",
            "media_type": "PHOTO",
        }
        return str(self._call(CONTENT_INIT, body)["publish_id"])

    def status(self, publish_id: str) -> dict:
        """PROCESSING_UPLOAD / PROCESSING_DOWNLOAD / SEND_TO_USER_INBOX / PUBLISH_COMPLETE / FAILED
        (https://developers.tiktok.com/doc/content-posting-api-reference-get-video-status; the
        full list is third-party: https://docs.workato.com/en/connectors/tiktok/check-post-status-action)."""
        return self._call(STATUS_FETCH, {"publish_id": publish_id})

    def video_query(self, video_ids: list[str], fields: tuple[str, ...] = VIDEO_STATS_FIELDS) -> list[dict]:
        """POST /v2/video/query/?fields=…: the user's own videos among `video_ids` (at most 20).

        A video TikTok does not return (deleted, private, not this user's) is simply absent.
        """
        data = self._call(
            VIDEO_QUERY, {"filters": {"video_ids": video_ids}}, params={"fields": ",".join(fields)}
        )
        return [video for video in data.get("videos") or [] if isinstance(video, dict)]

    def refresh(self, *, client_key: str, client_secret: str, refresh_token: str) -> dict:
        """POST /v2/oauth/token/ (form-encoded): a new access token AND a new refresh token; the
        old refresh token stops working once a new one is issued
        (https://developers.tiktok.com/docs/en/oauth-refresh-a-user-access-token)."""
        response, _ = self.request(
            "POST",
            OAUTH_TOKEN,
            data={
                "client_key": client_key,
                "client_secret": client_secret,
                "grant_type": "refresh_token",
                "refresh_token": refresh_token,
            },
        )
        body = json_body(response) if response.is_success else {}
        if not response.is_success or "access_token" not in body:
            raise tiktok_error(response)
        return body

    def _call(self, path: str, body: dict, params: dict | None = None) -> dict:
        response, _ = self.request("POST", path, json=body, params=params)
        if not response.is_success:
            raise tiktok_error(response)
        envelope = json_body(response)
        error = envelope.get("error") or {}
        if error.get("code") not in (None, "", "ok"):
            raise tiktok_error(response)
        self.last_request_id = str(error.get("log_id") or self.last_request_id)
        return envelope.get("data") or {}
