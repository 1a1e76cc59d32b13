"""What the Instagram, TikTok and HubSpot transports share beyond base.HttpTransport.

Publishing on Instagram and TikTok has no idempotency key
(https://developers.facebook.com/documentation/instagram-platform/instagram-graph-api/reference/ig-user/media_publish,
https://developers.tiktok.com/doc/content-posting-api-reference-direct-post), so a publisher
must know whether a failed call may still have reached the platform (`unclear`): a
connection never opened cannot have published; a timeout, a dropped connection or a 5xx may.
"""

from __future__ import annotations

import httpx

from core.transport import HttpTransport, TransportError


class PlatformError(TransportError):
    """A TransportError with the platform's error code and whether the call may have taken effect."""

    def __init__(
        self,
        message: str,
        *,
        permanent: bool,
        status: int | None = None,
        retry_after: float | None = None,
        auth: bool = False,
        request_id: str = "",
        code: str = "",
        subcode: str = "",
        unclear: bool = False,
    ):
        super().__init__(
            message,
            permanent=permanent,
            status=status,
            retry_after=retry_after,
            auth=auth,
            request_id=request_id,
        )
        self.code = code
        self.subcode = subcode
        self.unclear = unclear


_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class PlatformTransport(HttpTransport):
    """HttpTransport whose network errors say whether the request can have been sent.

    The last answer's status, duration and request id are kept for the audit rows
    (DeliveryAttempt) the publisher writes.
    """

    request_id_header = ""
    last_status: int | None = None
    last_duration_ms = 0
    last_request_id = ""

    def request(self, method: str, path: str, **kwargs) -> tuple[httpx.Response, int]:
        self.last_status, self.last_duration_ms, self.last_request_id = None, 0, ""
        try:
            response, duration = super().request(method, path, **kwargs)
        except TransportError as exc:
            cause = exc.__cause__
            raise PlatformError(
                exc.message, permanent=False, unclear=not isinstance(cause, _NOT_SENT)
            ) from cause
        self.last_status, self.last_duration_ms = response.status_code, duration
        self.last_request_id = (
            response.headers.get(self.request_id_header, "") if self.request_id_header else ""
        )
        return response, duration


def json_body(response: httpx.Response) -> dict:
    """A success body; one that is not a JSON object is a server fault (the call may have worked)."""
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise PlatformError(
            f"応答を読めませんでした（HTTP {response.status_code}）",
            permanent=False,
            status=response.status_code,
            unclear=True,
        )
    return data
