"""The one Instagram Graph API client (Instagram API with Instagram Login).

Publishing is container → status → `media_publish`; containers expire after 24 h and
`media_publish` has no idempotency key
(https://developers.facebook.com/docs/instagram-platform/content-publishing/). Errors are
`{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}`, branched on by code,
not HTTP status (https://developers.facebook.com/docs/graph-api/guides/error-handling). The
token travels in an `Authorization: Bearer` header, never in a URL; host and version are settings.
"""

from __future__ import annotations

from typing import Any

import httpx
from django.conf import settings

from deliveries.channels.platform_transport import PlatformError, PlatformTransport, json_body

# Code → how the retry policy treats it: https://developers.facebook.com/docs/graph-api/guides/error-handling
# (32 and 613: an old copy of Meta's table; 80002: third-party,
# https://github.com/trypostit/trypost/issues/281; both UNCONFIRMED).
AUTH_CODES = {190, 102}
TRANSIENT_CODES = {1, 2}
THROTTLE_CODES = {4, 17, 32, 613, 80002}
BLOCKED_CODES = {341, 368}  # app limit / policy block: "retry much later"
PERMISSION_CODES = {10} | set(range(200, 300))
NOT_READY = (9007, 2207027)  # container not FINISHED yet
BLOCKED_AFTER_PUBLISH = (4, 2207051)  # seen after the post went live (postiz-app#1681)
MEDIA_FETCH_FAILED = (9004, 2207052)
# The API references' figure, used when the limit cannot be read:
# https://developers.facebook.com/documentation/instagram-platform/instagram-graph-api/reference/ig-user/content_publishing_limit
FALLBACK_QUOTA = 50
BLOCKED_RETRY_AFTER = 3600.0


def graph_error(response: httpx.Response) -> PlatformError:
    """Sort a Graph API error into the retry policy (core/retry.py)."""
    try:
        error = response.json().get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    code, subcode = _int(error.get("code")), _int(error.get("error_subcode"))
    text = error.get("error_user_msg") or error.get("message") or response.reason_phrase
    label = f"Instagram のエラー（code {code}{f'/{subcode}' if subcode else ''}）: {text}"
    common: dict[str, Any] = {
        "status": response.status_code,
        "request_id": str(error.get("fbtrace_id") or ""),
        "code": str(code or ""),
        "subcode": str(subcode or ""),
    }
    if code in AUTH_CODES or (error.get("type") == "OAuthException" and code is None):
        return PlatformError(
            f"認証エラー: Instagram のトークンが期限切れか無効です。{label}",
            permanent=True,
            auth=True,
            **common,
        )
    if (code, subcode) == BLOCKED_AFTER_PUBLISH:
        return PlatformError(label, permanent=False, unclear=True, **common)
    if code in THROTTLE_CODES:
        return PlatformError(f"レート制限: {label}", permanent=False, **common)
    if code in BLOCKED_CODES:
        return PlatformError(
            f"一時的な制限: {label}", permanent=False, retry_after=BLOCKED_RETRY_AFTER, **common
        )
    if code in PERMISSION_CODES:
        return PlatformError(f"権限がありません: {label}", permanent=True, **common)
    if code in TRANSIENT_CODES or error.get("is_transient") is True or response.status_code >= 500:
        return PlatformError(f"一時的なエラー: {label}", permanent=False, unclear=True, **common)
    return PlatformError(f"Instagram が受け付けませんでした: {label}", permanent=True, **common)


def _int(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _metric_value(row: dict) -> float | None:
    """`values[0].value` (period lifetime) or `total_value.value`, whichever the metric uses."""
    values = row.get("values") or [{}]
    value = (values[0] or {}).get("value")
    if value is None:
        value = (row.get("total_value") or {}).get("value")
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def is_not_ready(exc: PlatformError) -> bool:
    return (exc.code, exc.subcode) == tuple(str(n) for n in NOT_READY)


class InstagramTransport(PlatformTransport):
    service = "instagram"
    request_id_header = "x-fb-trace-id"

    def __init__(
        self,
        *,
        token: str,
        base_url: str | None = None,
        version: str | None = None,
        timeout: float | None = None,
        transport=None,
    ):
        self.host = (base_url or settings.INSTAGRAM_GRAPH_BASE_URL).rstrip("/")
        super().__init__(
            base_url=f"{self.host}/{version or settings.INSTAGRAM_GRAPH_API_VERSION}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout or settings.PLATFORM_TIMEOUT_SECONDS,
            transport=transport,
        )

    def create_container(self, ig_user_id: str, params: dict[str, Any]) -> str:
        """POST /{ig-user-id}/media: an image, reel, carousel item or carousel container."""
        return str(self._call("POST", f"/{ig_user_id}/media", json=params)["id"])

    def container_status(self, container_id: str) -> dict:
        """`status_code`: IN_PROGRESS, FINISHED, ERROR, EXPIRED or PUBLISHED; `status` on ERROR."""
        return self._call("GET", f"/{container_id}", params={"fields": "status_code,status"})

    def publish(self, ig_user_id: str, container_id: str) -> str:
        """POST /{ig-user-id}/media_publish: NOT idempotent; returns the IG media id."""
        return str(
            self._call("POST", f"/{ig_user_id}/media_publish", json={"creation_id": container_id})["id"]
        )

    def username(self, ig_user_id: str) -> str:
        """The IG user's `username`: proves the token and that it reaches this account
        (https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user)."""
        return str(self._call("GET", f"/{ig_user_id}", params={"fields": "username"}).get("username") or "")

    def permalink(self, media_id: str) -> str:
        return str(self._call("GET", f"/{media_id}", params={"fields": "permalink"}).get("permalink") or "")

    def media_insights(self, media_id: str, metrics: list[str]) -> dict[str, float | None]:
        """GET /{ig-media-id}/insights: {metric: value}; a metric Meta left out is None, never 0.

        Meta answers an empty data set for figures that do not exist or are not ready yet
        (https://developers.facebook.com/docs/instagram-platform/reference/instagram-media/insights).
        """
        data = self._call("GET", f"/{media_id}/insights", params={"metric": ",".join(metrics)})
        found = {str(row.get("name")): _metric_value(row) for row in data.get("data") or []}
        return {metric: found.get(metric) for metric in metrics}

    def publishing_limit(self, ig_user_id: str) -> tuple[int, int, int]:
        """(used, total, window seconds) in the rolling window; `fields` asked explicitly.

        Without it only `quota_usage` comes back:
        https://developers.facebook.com/documentation/instagram-platform/instagram-graph-api/reference/ig-user/content_publishing_limit
        """
        data = self._call(
            "GET", f"/{ig_user_id}/content_publishing_limit", params={"fields": "quota_usage,config"}
        )
        row = (data.get("data") or [{}])[0]
        config = row.get("config") or {}
        return (
            int(row.get("quota_usage") or 0),
            int(config.get("quota_total") or FALLBACK_QUOTA),
            int(config.get("quota_duration") or 86400),
        )

    def refresh_token(self, token: str) -> dict:
        """GET {host}/refresh_access_token (unversioned): a new 60-day token.

        https://developers.facebook.com/documentation/instagram-platform/reference/refresh_access_token

        The token is a query parameter here because that is the documented form.
        """
        response, _ = self.request(
            "GET",
            f"{self.host}/refresh_access_token",
            params={"grant_type": "ig_refresh_token", "access_token": token},
        )
        if not response.is_success:
            raise graph_error(response)
        return json_body(response)

    def _call(self, method: str, path: str, **kwargs) -> dict:
        response, _ = self.request(method, path, **kwargs)
        if not response.is_success:
            raise graph_error(response)
        return json_body(response)
