"""What every outbound transport shares (the channels' and LINE's): timeouts, status sorting,
Retry-After."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from core import metrics
from core.http import http_client


class TransportError(Exception):
    """A failed send. `permanent` failures end the delivery; others are retried later."""

    def __init__(
        self,
        message: str,
        *,
        permanent: bool,
        status: int | None = None,
        retry_after: float | None = None,
        auth: bool = False,
        request_id: str = "",
    ):
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.status = status
        self.retry_after = retry_after
        self.auth = auth
        self.request_id = request_id


@dataclass
class SendResult:
    status: int
    request_id: str
    duplicate: bool = False  # the provider had already accepted this retry key
    body: dict[str, Any] = field(default_factory=dict)
    duration_ms: int = 0


def parse_retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds); None when absent or unreadable."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class HttpTransport:
    """Base for JSON-over-HTTPS channels; subclasses say how to read errors."""

    service = "http"

    def __init__(self, *, base_url: str, headers: dict[str, str], timeout: float, transport=None):
        self._http = http_client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, **kwargs) -> tuple[httpx.Response, int]:
        started = time.perf_counter()
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            metrics.outbound_call(self.service, "timeout")
            raise TransportError(f"タイムアウトしました（{type(exc).__name__}）", permanent=False) from exc
        except httpx.TransportError as exc:
            metrics.outbound_call(self.service, "connection_error")
            raise TransportError(f"接続できませんでした（{type(exc).__name__}）", permanent=False) from exc
        metrics.outbound_call(self.service, str(response.status_code))
        return response, int((time.perf_counter() - started) * 1000)

    def raise_for(self, response: httpx.Response, reason: str, request_id: str = "") -> None:
        """Sort a non-2xx answer into the retry policy (core/retry.py)."""
        status = response.status_code
        if status == 429:
            raise TransportError(
                f"レート制限（429）: {reason}",
                permanent=False,
                status=status,
                retry_after=parse_retry_after(response),
                request_id=request_id,
            )
        if status >= 500:
            raise TransportError(
                f"サーバーエラー（{status}）: {reason}", permanent=False, status=status, request_id=request_id
            )
        if status in (401, 403):
            raise TransportError(
                f"認証エラー（{status}）: トークンの期限切れまたは無効です。{reason}",
                permanent=True,
                status=status,
                auth=True,
                request_id=request_id,
            )
        label = "リクエスト内容が不正です" if status == 422 else "リクエストが拒否されました"
        raise TransportError(
            f"{label}（{status}）: {reason}", permanent=True, status=status, request_id=request_id
        )
