"""In-memory fake of TikTok's Content Posting API (Direct Post) and OAuth refresh, on loopback.

Follows TikTok's docs (https://developers.tiktok.com/doc/content-posting-api-reference-direct-post,
https://developers.tiktok.com/doc/tiktok-api-v2-error-handling). It keeps server-side state
(accounts with rotating refresh tokens, publishes, per-minute counters) so that publish-once
tests can count ``init`` calls, including when an init succeeded but its answer was lost.
Every answer is the v2 envelope ``{"data": …, "error": {"code", "message", "log_id"}}``
(``code: "ok"`` on success). What it models, and the fake's own choices where TikTok is
UNCONFIRMED:

- Accounts (``add_account``): access tokens with an expiry on ``clock`` and ONE current
  refresh token. ``POST /v2/oauth/token/`` rotates: a new access token and a new refresh
  token; the old refresh token answers 400 ``invalid_grant`` from then on.
- ``creator_info`` returns the account's ``creator_nickname``, ``privacy_level_options``
  (unaudited app: SELF_ONLY only) and ``comment_disabled`` / ``duet_disabled`` /
  ``stitch_disabled`` (the creator's own settings).
- ``post_info`` of an init is checked as the references describe it
  (https://developers.tiktok.com/doc/content-posting-api-reference-direct-post,
  https://developers.tiktok.com/doc/content-posting-api-reference-photo-post): the
  interaction and commercial-content fields are booleans, a video title is at most 2,200
  UTF-16 units and a photo title at most 90 UTF-16 units (the photo-post reference), a
  photo description at most 4,000; anything else → 400 ``invalid_params``. What TikTok answers to an interaction
  allowed that the creator turned off is not documented: the fake accepts it and keeps the
  body (``inits()``) for tests to see.
- ``status/fetch`` answers PROCESSING_DOWNLOAD ``processing_fetches`` times, then
  PUBLISH_COMPLETE (``publicaly_available_post_id`` only for non-SELF_ONLY posts) or
  FAILED with ``fail_next_publish``'s reason.
- ``POST /v2/video/query/?fields=…`` (Display API, effect measurement; sources
  at ``VIDEO_QUERY`` in deliveries/channels/tiktok/transport.py): the token owner's published videos
  among ``filters.video_ids`` (at most 20), with ``DEFAULT_VIDEO_STATS`` or what
  ``set_video_stats`` gave, only the asked fields; other ids are left out.
- Per-token per-minute limits (creator_info 20, init 6, status 30, video/query 600) → 429
  ``rate_limit_exceeded``; an unknown or expired token → 401 ``access_token_invalid``.
"""

from __future__ import annotations

import itertools
import secrets
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sandbox.fakeserver import ApiError, FakeServer, Json, Reply, Request

CREATOR_INFO = "/v2/post/publish/creator_info/query/"
VIDEO_INIT = "/v2/post/publish/video/init/"
CONTENT_INIT = "/v2/post/publish/content/init/"
STATUS_FETCH = "/v2/post/publish/status/fetch/"
OAUTH_TOKEN = "/v2/oauth/token/"
VIDEO_QUERY = "/v2/video/query/"
PER_MINUTE = {CREATOR_INFO: 20, VIDEO_INIT: 6, CONTENT_INIT: 6, STATUS_FETCH: 30, VIDEO_QUERY: 600}
MAX_QUERY_IDS = 20
DEFAULT_VIDEO_STATS: dict[str, int | None] = {
    "view_count": 2_310,
    "like_count": 154,
    "comment_count": 12,
    "share_count": 9,
}
ACCESS_TTL = 86400
REFRESH_TTL = 180 * 86400
_CODES_BY_STATUS = {
    400: "invalid_params",
    401: "access_token_invalid",
    403: "scope_not_authorized",
    429: "rate_limit_exceeded",
}


def envelope(data: Any = None, *, code: str = "ok", message: str = "") -> Json:
    return {
        "data": data if data is not None else {},
        "error": {"code": code, "message": message, "log_id": secrets.token_hex(12)},
    }


def tiktok_error(status: int, code: str, message: str) -> ApiError:
    return ApiError(status, envelope(code=code, message=message))


@dataclass
class Account:
    open_id: str
    username: str
    refresh_token: str
    privacy_level_options: list[str]
    daily_cap: int = 15
    posts: int = 0
    nickname: str = "デモ"
    comment_disabled: bool = False
    duet_disabled: bool = False
    stitch_disabled: bool = False


@dataclass
class Publish:
    publish_id: str
    open_id: str
    kind: str
    body: Json
    fetches_left: int
    fail_reason: str = ""
    post_id: str = ""
    status: str = "PROCESSING_DOWNLOAD"


class FakeTikTok(FakeServer):
    name = "fake-tiktok"

    def __init__(
        self,
        *,
        client_key: str = "sandbox-client-key",
        client_secret: str = "sandbox-client-secret",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.client_key, self.client_secret = client_key, client_secret
        self.accounts: dict[str, Account] = {}
        self._access: dict[str, tuple[str, float]] = {}  # token → (open_id, expires at)
        self.publishes: dict[str, Publish] = {}
        self.processing_fetches = 1
        self.refresh_calls = 0
        self.video_stats: dict[str, dict[str, int | None]] = {}
        self._fail_reasons: list[str] = []
        self._windows: dict[tuple[str, str], list[float]] = defaultdict(list)
        self._post_ids = itertools.count(7_400_000_000_000_000_000 + secrets.randbelow(10**15))
        super().__init__(host=host, port=port)

    # -- setup -----------------------------------------------------------------------

    def add_account(
        self,
        open_id: str,
        *,
        access_token: str,
        refresh_token: str = "",
        username: str = "automedia_demo",
        privacy_level_options: list[str] | None = None,
        expires_in: float = ACCESS_TTL,
    ) -> Account:
        account = Account(open_id, username, refresh_token, list(privacy_level_options or ["SELF_ONLY"]))
        with self._lock:
            self.accounts[open_id] = account
            self._access[access_token] = (open_id, self.clock() + expires_in)
        return account

    def expire_access_token(self, token: str) -> None:
        with self._lock:
            open_id, _ = self._access[token]
            self._access[token] = (open_id, 0.0)

    def fail_next_publish(self, reason: str = "video_pull_failed") -> None:
        with self._lock:
            self._fail_reasons.append(reason)

    def fail_tiktok(self, status: int, code: str, message: str = "error", **fault: Any) -> None:
        self.fail_next(status, body=envelope(code=code, message=message), **fault)

    def set_video_stats(self, post_id: str, **counts: int | None) -> None:
        """The video's counts (over DEFAULT_VIDEO_STATS); None = the field is left out."""
        with self._lock:
            self.video_stats[post_id] = {**DEFAULT_VIDEO_STATS, **counts}

    # -- inspection ------------------------------------------------------------------

    def inits(self) -> list[Publish]:
        with self._lock:
            return list(self.publishes.values())

    # -- FakeServer hooks ------------------------------------------------------------

    def routes(self):
        return [
            ("POST", CREATOR_INFO, self._creator_info),
            ("POST", VIDEO_INIT, self._video_init),
            ("POST", CONTENT_INIT, self._content_init),
            ("POST", STATUS_FETCH, self._status),
            ("POST", OAUTH_TOKEN, self._token),
            ("POST", VIDEO_QUERY, self._video_query),
        ]

    def authenticate(self, request: Request) -> None:
        if request.path == OAUTH_TOKEN:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        with self._lock:
            found = self._access.get(token.strip()) if scheme.lower() == "bearer" else None
            if found is None or found[1] <= self.clock():
                raise tiktok_error(
                    401, "access_token_invalid", "The access token is invalid or not found in the request."
                )
            self._limit(token.strip(), request.path)

    def error_body(self, status: int) -> Any:
        return envelope(code=_CODES_BY_STATUS.get(status, "internal_error"), message="error")

    def decorate(self, request: Request, reply: Reply) -> None:
        body = reply.body if isinstance(reply.body, dict) else {}
        error = body.get("error")
        log_id = error.get("log_id") if isinstance(error, dict) else body.get("log_id")
        reply.headers.setdefault("x-tt-logid", log_id or secrets.token_hex(12))

    # -- helpers (the caller holds the lock) -------------------------------------------

    def _limit(self, token: str, path: str) -> None:
        limit = PER_MINUTE.get(path)
        if limit is None:
            return
        now = self.clock()
        window = [t for t in self._windows[(token, path)] if t > now - 60]
        if len(window) >= limit:
            raise tiktok_error(
                429, "rate_limit_exceeded", "Too many requests for this token; try again in a minute."
            )
        window.append(now)
        self._windows[(token, path)] = window

    def _account(self, request: Request) -> Account:
        token = request.headers["authorization"].partition(" ")[2].strip()
        return self.accounts[self._access[token][0]]

    # -- endpoints -------------------------------------------------------------------

    def _creator_info(self, request: Request) -> Reply:
        with self._lock:
            account = self._account(request)
            data = {
                "creator_avatar_url": f"https://p16.tiktokcdn.com/fake/{account.open_id}.jpeg",
                "creator_username": account.username,
                "creator_nickname": account.nickname,
                "privacy_level_options": list(account.privacy_level_options),
                "comment_disabled": account.comment_disabled,
                "duet_disabled": account.duet_disabled,
                "stitch_disabled": account.stitch_disabled,
                "max_video_post_duration_sec": 600,
            }
        return Reply(200, envelope(data))

    def _video_init(self, request: Request) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        source = body.get("source_info") or {}
        if source.get("source") != "PULL_FROM_URL" or not str(source.get("video_url", "")).startswith(
            "https://"
        ):
            raise tiktok_error(
                400, "invalid_params", "source_info.video_url must be an https URL for PULL_FROM_URL"
            )
        return self._init(request, "video", body)

    def _content_init(self, request: Request) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        photos = (body.get("source_info") or {}).get("photo_images") or []
        if body.get("media_type") != "PHOTO" or not photos:
            raise tiktok_error(
                400, "invalid_params", "media_type PHOTO with source_info.photo_images is required"
            )
        return self._init(request, "photo", body)

    def _init(self, request: Request, kind: str, body: Json) -> Reply:
        post_info = body.get("post_info") if isinstance(body.get("post_info"), dict) else {}
        if problem := _post_info_problem(kind, post_info):
            raise tiktok_error(400, "invalid_params", problem)
        level = post_info.get("privacy_level")
        with self._lock:
            account = self._account(request)
            if level not in account.privacy_level_options:
                raise tiktok_error(
                    403,
                    "privacy_level_option_mismatch",
                    f"privacy_level {level} is not allowed for this creator",
                )
            if account.posts >= account.daily_cap:
                raise tiktok_error(
                    403,
                    "spam_risk_too_many_posts",
                    "The daily post cap from API is reached for the current user.",
                )
            account.posts += 1
            publish_id = f"v_pub_url~v2-1.{secrets.token_hex(10)}"
            reason = self._fail_reasons.pop(0) if self._fail_reasons else ""
            self.publishes[publish_id] = Publish(
                publish_id, account.open_id, kind, body, self.processing_fetches, reason
            )
        return Reply(200, envelope({"publish_id": publish_id}), effect=True)

    def _status(self, request: Request) -> Reply:
        publish_id = str((request.body or {}).get("publish_id") or "")
        with self._lock:
            account = self._account(request)
            publish = self.publishes.get(publish_id)
            if publish is None or publish.open_id != account.open_id:
                raise tiktok_error(400, "invalid_params", "publish_id not found")
            self._advance(publish)
            data: Json = {"status": publish.status, "uploaded_bytes": 0, "downloaded_bytes": 1_048_576}
            if publish.status == "FAILED":
                data["fail_reason"] = publish.fail_reason
            if publish.post_id:
                data["publicaly_available_post_id"] = [int(publish.post_id)]  # sic
        return Reply(200, envelope(data))

    def _advance(self, publish: Publish) -> None:
        if publish.status != "PROCESSING_DOWNLOAD":
            return
        if publish.fetches_left > 0:
            publish.fetches_left -= 1
            return
        if publish.fail_reason:
            publish.status = "FAILED"
            return
        publish.status = "PUBLISH_COMPLETE"
        if (publish.body.get("post_info") or {}).get("privacy_level") != "SELF_ONLY":
            publish.post_id = str(next(self._post_ids))

    def _video_query(self, request: Request) -> Reply:
        fields = [f for f in request.param("fields").split(",") if f]
        ids = ((request.body or {}).get("filters") or {}).get("video_ids")
        if not fields or not isinstance(ids, list) or not 1 <= len(ids) <= MAX_QUERY_IDS:
            raise tiktok_error(
                400, "invalid_params", f"fields and filters.video_ids (1..{MAX_QUERY_IDS}) are required"
            )
        wanted = {str(i) for i in ids}
        with self._lock:
            account = self._account(request)
            videos = [
                self._video(publish, account, fields)
                for publish in self.publishes.values()
                if publish.post_id in wanted and publish.open_id == account.open_id
            ]
        return Reply(200, envelope({"videos": videos, "cursor": 0, "has_more": False}))

    def _video(self, publish: Publish, account: Account, fields: list[str]) -> Json:
        stats = self.video_stats.get(publish.post_id) or DEFAULT_VIDEO_STATS
        video = {
            "id": publish.post_id,
            "share_url": f"https://www.tiktok.com/@{account.username}/video/{publish.post_id}",
            "title": str((publish.body.get("post_info") or {}).get("title") or ""),
            **{k: v for k, v in stats.items() if v is not None},
        }
        return {k: v for k, v in video.items() if k in fields}

    def _token(self, request: Request) -> Reply:
        form = request.body if isinstance(request.body, dict) else {}
        if form.get("client_key") != self.client_key or form.get("client_secret") != self.client_secret:
            raise ApiError(
                401,
                {
                    "error": "invalid_client",
                    "error_description": "Client key or secret is invalid.",
                    "log_id": secrets.token_hex(12),
                },
            )
        with self._lock:
            self.refresh_calls += 1
            account = next(
                (
                    a
                    for a in self.accounts.values()
                    if a.refresh_token and a.refresh_token == form.get("refresh_token")
                ),
                None,
            )
            if form.get("grant_type") != "refresh_token" or account is None:
                raise ApiError(
                    400,
                    {
                        "error": "invalid_grant",
                        "error_description": "Refresh token is invalid or expired.",
                        "log_id": secrets.token_hex(12),
                    },
                )
            access, account.refresh_token = (
                f"act.{secrets.token_urlsafe(24)}",
                f"rft.{secrets.token_urlsafe(24)}",
            )
            self._access[access] = (account.open_id, self.clock() + ACCESS_TTL)
            answer = {
                "access_token": access,
                "expires_in": ACCESS_TTL,
                "open_id": account.open_id,
                "refresh_token": account.refresh_token,
                "refresh_expires_in": REFRESH_TTL,
                "scope": "user.info.basic,video.publish,video.list",
                "token_type": "Bearer",
            }
        return Reply(200, answer, effect=True)


POST_INFO_BOOLEANS = {
    "video": (
        "disable_comment",
        "disable_duet",
        "disable_stitch",
        "brand_content_toggle",
        "brand_organic_toggle",
    ),
    "photo": ("disable_comment", "auto_add_music", "brand_content_toggle", "brand_organic_toggle"),
}
POST_INFO_TEXTS = {"video": {"title": 2200}, "photo": {"title": 90, "description": 4000}}


def _post_info_problem(kind: str, post_info: Json) -> str:
    """What the references' post_info does not allow; empty when it is acceptable."""
    for name in POST_INFO_BOOLEANS[kind]:
        if name in post_info and not isinstance(post_info[name], bool):
            return f"post_info.{name} must be a boolean"
    for name, limit in POST_INFO_TEXTS[kind].items():
        value = post_info.get(name, "")
        if not isinstance(value, str):
            return f"post_info.{name} must be a string"
        if len(value.encode("utf-16-le")) // 2 > limit:
            return f"post_info.{name} exceeds {limit} characters"
    return ""
