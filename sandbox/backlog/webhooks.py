"""The fake Backlog's project webhooks: each activity POSTed to the project's URL."""

from __future__ import annotations

import logging
import queue
import threading
from urllib.parse import urlsplit

import httpx

logger = logging.getLogger(__name__)


class WebhookPoster:
    """POSTs webhook bodies in order from one thread; failures are logged and dropped, as
    Backlog documents no retry."""

    def __init__(self, timeout: float = 5.0) -> None:
        self._timeout = timeout
        self._queue: queue.Queue[tuple[str, bytes] | None] = queue.Queue()
        self._idle = threading.Condition()
        self._pending = 0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fake-backlog-webhooks", daemon=True)
        self._thread.start()

    def submit(self, url: str, body: bytes) -> None:
        with self._idle:
            self._pending += 1
        self._queue.put((url, body))

    def flush(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(timeout)
        self._thread = None

    def _run(self) -> None:
        with httpx.Client(timeout=self._timeout, headers={"User-Agent": "fake-backlog"}) as client:
            while (item := self._queue.get()) is not None:
                self._deliver(client, *item)
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()

    @staticmethod
    def _deliver(client: httpx.Client, url: str, body: bytes) -> None:
        host = urlsplit(url).netloc  # the path may carry the receiver's secret token
        headers = {"Content-Type": "application/json; charset=utf-8"}
        try:
            response = client.post(url, content=body, headers=headers)
        except httpx.HTTPError as error:
            logger.warning("webhook to %s failed: %s", host, error)
            return
        if response.is_error:
            logger.warning("webhook to %s answered %s", host, response.status_code)
