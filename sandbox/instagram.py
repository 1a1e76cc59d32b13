"""In-memory fake of the Instagram Graph API (content publishing), served on loopback.

Follows Meta's docs (https://developers.facebook.com/docs/instagram-platform/content-publishing/,
https://developers.facebook.com/docs/graph-api/guides/error-handling). It keeps server-side
state (containers, published media, quota, tokens) so that publish-once tests can count
``media_publish`` calls, including when a publish succeeded but its answer was lost. One
professional account (``ig_user_id``). What it models, and the fake's own choices where
Meta's behaviour is UNCONFIRMED:

- Tokens: ``tokens`` (None = any non-empty token) as ``Authorization: Bearer`` or
  ``access_token``; ``expire_token`` makes one answer OAuthException 190 (HTTP 400).
  ``GET /refresh_access_token`` issues a new 60-day token (the old one keeps working).
- Containers: ``POST /{v}/{ig}/media`` (image, REELS, carousel items, CAROUSEL). Each
  answers IN_PROGRESS for ``processing_polls`` status reads and for ``processing_seconds``
  on ``clock`` after its creation (real images take seconds, videos longer), then FINISHED
  (or ERROR with ``fail_next_container``); EXPIRED 24 h after creation on ``clock``; PUBLISHED once
  published. A media URL in ``unreachable_urls`` answers 9004/2207052. ``is_ai_generated``
  (the AI info label, June 2026, all versions:
  https://developers.facebook.com/documentation/instagram-platform/changelog) must be a
  boolean and, for a carousel, is set on the carousel container only; the fake's answer to
  either mistake is code 100 (its choice).
- ``POST /{v}/{ig}/media_publish``: not FINISHED → 9007/2207027; over the quota → code 9,
  subcode 2207042 (the fake's choice); a container already PUBLISHED → code 100, subcode
  2207008 (the fake's choice) and ``double_publishes`` counts it: tests assert it stays 0.
- ``GET /{v}/{ig}/content_publishing_limit`` → ``quota_usage`` and ``config`` (50 / 86400).
- ``GET /{v}/{id}`` reads a container (status_code, status) or a media (permalink).
- ``GET /{v}/{media}/insights?metric=…`` (effect measurement; sources at
  ``InstagramTransport.media_insights``): ``DEFAULT_INSIGHTS`` or what ``set_insights`` gave,
  with each metric a figure for; a metric set to None is left out of ``data``, as Meta
  does for figures it does not have. The deprecated metrics, and reel-only ones on other
  media, answer code 100 (the exact message is the fake's choice).
- Faults: ``fail_next`` (see fakeserver.py) and ``fail_graph`` for Graph-shaped errors.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass
from typing import Any

from sandbox.fakeserver import ApiError, FakeServer, Json, Reply, Request

DEFAULT_IG_USER_ID = "17841400000000001"
CONTAINER_TTL = 24 * 3600
TOKEN_TTL = 60 * 24 * 3600
DEFAULT_INSIGHTS: dict[str, int | None] = {
    "views": 1_240,
    "reach": 980,
    "likes": 86,
    "comments": 7,
    "shares": 5,
    "saved": 12,
    "total_interactions": 110,
    "ig_reels_avg_watch_time": 5_400,
}
REEL_ONLY_METRICS = {"ig_reels_avg_watch_time", "ig_reels_video_view_total_time"}
DEPRECATED_METRICS = {
    "impressions",
    "plays",
    "clips_replays_count",
    "ig_reels_aggregated_all_plays_count",
    "video_views",
}


def graph_error(
    code: int,
    message: str,
    *,
    subcode: int | None = None,
    kind: str = "OAuthException",
    transient: bool = False,
) -> Json:
    error: Json = {"message": message, "type": kind, "code": code, "fbtrace_id": secrets.token_urlsafe(8)}
    if subcode is not None:
        error["error_subcode"] = subcode
    error["is_transient"] = transient
    return {"error": error}


@dataclass
class Container:
    id: str
    params: Json
    created_at: float
    polls_left: int
    final_status: str = "FINISHED"
    ready_at: float = 0.0  # IN_PROGRESS until then (clock)
    status_code: str = "IN_PROGRESS"
    media_id: str = ""


class FakeInstagram(FakeServer):
    name = "fake-instagram"

    def __init__(
        self,
        *,
        ig_user_id: str = DEFAULT_IG_USER_ID,
        tokens: set[str] | None = None,
        version: str = "v25.0",
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.ig_user_id = ig_user_id
        self.username = "automedia_sandbox"
        self.version = version
        self._tokens: dict[str, float] | None = (
            None if tokens is None else dict.fromkeys(tokens, float("inf"))
        )
        self.containers: dict[str, Container] = {}
        self.media: dict[str, Json] = {}
        self.quota_total = 50
        self.quota_usage = 0
        self.processing_polls = 0
        self.processing_seconds = 0.0
        self.unreachable_urls: set[str] = set()
        self.double_publishes = 0
        self.insights: dict[str, dict[str, int | None]] = {}
        self._next_status: list[str] = []
        self._ids = itertools.count(17_900_000_000_000_000 + secrets.randbelow(10**12))
        super().__init__(host=host, port=port)

    # -- setup -----------------------------------------------------------------------

    def expire_token(self, token: str) -> None:
        with self._lock:
            if self._tokens is None:
                self._tokens = {}
            self._tokens[token] = 0.0

    def fail_next_container(self, status: str = "ERROR") -> None:
        """The next container ends in ``status`` (ERROR) instead of FINISHED."""
        with self._lock:
            self._next_status.append(status)

    def fail_graph(
        self,
        code: int,
        message: str = "An error occurred",
        *,
        subcode: int | None = None,
        status: int = 400,
        transient: bool = False,
        **fault: Any,
    ) -> None:
        self.fail_next(status, body=graph_error(code, message, subcode=subcode, transient=transient), **fault)

    def set_insights(self, media_id: str, **figures: int | None) -> None:
        """The media's insight figures (over DEFAULT_INSIGHTS); None = not available."""
        with self._lock:
            self.insights[media_id] = {**DEFAULT_INSIGHTS, **figures}

    # -- inspection ------------------------------------------------------------------

    def published(self) -> list[Json]:
        with self._lock:
            return list(self.media.values())

    def publish_calls(self) -> list[Request]:
        """Every media_publish request received (also those still waiting on an injected delay)."""
        with self._lock:
            return [r for r in self.received if r.method == "POST" and r.path.endswith("/media_publish")]

    # -- FakeServer hooks ----------------------------------------------------------------

    def routes(self):
        v = r"/(?P<version>v\d+\.\d+)"
        return [
            ("POST", v + r"/(?P<user>\d+)/media", self._create),
            ("POST", v + r"/(?P<user>\d+)/media_publish", self._publish),
            ("GET", v + r"/(?P<user>\d+)/content_publishing_limit", self._limit),
            ("GET", v + r"/(?P<object_id>\d+)", self._read),
            ("GET", v + r"/(?P<media_id>\d+)/insights", self._insights),
            ("GET", r"/refresh_access_token", self._refresh),
        ]

    def authenticate(self, request: Request) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else request.param("access_token")
        if not token:
            raise ApiError(
                400, graph_error(2500, "An active access token must be used to query information.")
            )
        with self._lock:
            expiry = None if self._tokens is None else self._tokens.get(token)
            if self._tokens is not None and expiry is None:
                raise ApiError(
                    400, graph_error(190, "Invalid OAuth access token - Cannot parse access token")
                )
            if expiry is not None and expiry <= self.clock():
                raise ApiError(
                    400, graph_error(190, "Error validating access token: Session has expired.", subcode=463)
                )

    def error_body(self, status: int) -> Any:
        if status >= 500:
            return graph_error(
                2, "An unexpected error has occurred. Please retry your request later.", transient=True
            )
        return graph_error(100, "Invalid parameter", kind="GraphMethodException")

    def decorate(self, request: Request, reply: Reply) -> None:
        reply.headers.setdefault("x-fb-trace-id", secrets.token_urlsafe(8))

    # -- endpoints ---------------------------------------------------------------------

    def _user(self, user: str) -> None:
        if user != self.ig_user_id:
            raise ApiError(
                400,
                graph_error(
                    100,
                    f"Unsupported request - object with ID '{user}' does not exist",
                    kind="GraphMethodException",
                ),
            )

    def _create(self, request: Request, version: str, user: str) -> Reply:
        self._user(user)
        params = (
            dict(request.body or {})
            if isinstance(request.body, dict)
            else {k: v[0] for k, v in request.query.items()}
        )
        self._check_media(params)
        with self._lock:
            container_id = str(next(self._ids))
            final = self._next_status.pop(0) if self._next_status else "FINISHED"
            now = self.clock()
            self.containers[container_id] = Container(
                container_id,
                params,
                now,
                self.processing_polls,
                final,
                ready_at=now + self.processing_seconds,
            )
        return Reply(200, {"id": container_id}, effect=True)

    def _check_media(self, params: Json) -> None:
        if "is_ai_generated" in params:
            if params["is_ai_generated"] not in (True, False, "true", "false"):
                raise ApiError(400, graph_error(100, "The parameter is_ai_generated must be a boolean"))
            if str(params.get("is_carousel_item")).lower() == "true":
                raise ApiError(
                    400, graph_error(100, "Set is_ai_generated on the carousel container, not on its items")
                )
        kind = str(params.get("media_type") or "IMAGE").upper()
        if kind == "CAROUSEL":
            children = [c for c in str(params.get("children") or "").split(",") if c]
            if not children or any(c not in self.containers for c in children):
                raise ApiError(
                    400, graph_error(100, "The parameter children is required and must be container ids")
                )
            return
        key = "video_url" if kind in ("REELS", "VIDEO") else "image_url"
        url = str(params.get(key) or "")
        if not url:
            raise ApiError(400, graph_error(100, f"The parameter {key} is required"))
        if not url.startswith(("http://", "https://")) or url in self.unreachable_urls:
            raise ApiError(
                400,
                graph_error(
                    9004,
                    "Media download has failed. The media URI doesn't meet our requirements.",
                    subcode=2207052,
                ),
            )

    def _status(self, container: Container, *, poll: bool) -> str:
        if container.status_code == "PUBLISHED":
            return "PUBLISHED"
        if self.clock() - container.created_at > CONTAINER_TTL:
            return "EXPIRED"
        if container.polls_left > 0:
            if poll:
                container.polls_left -= 1
            return "IN_PROGRESS"
        if self.clock() < container.ready_at:
            return "IN_PROGRESS"
        container.status_code = container.final_status
        return container.status_code

    def _publish(self, request: Request, version: str, user: str) -> Reply:
        self._user(user)
        creation_id = str((request.body or {}).get("creation_id") or request.param("creation_id"))
        with self._lock:
            container = self.containers.get(creation_id)
            if container is None:
                raise ApiError(400, graph_error(100, "The parameter creation_id is required"))
            status = self._status(container, poll=False)
            if status == "PUBLISHED":
                self.double_publishes += 1
                raise ApiError(400, graph_error(100, "The media has already been published", subcode=2207008))
            if status == "IN_PROGRESS":
                raise ApiError(400, graph_error(9007, "Media ID is not available", subcode=2207027))
            if status != "FINISHED":
                raise ApiError(
                    400, graph_error(100, f"The media cannot be published ({status})", subcode=2207001)
                )
            if self.quota_usage >= self.quota_total:
                raise ApiError(400, graph_error(9, "Application request limit reached", subcode=2207042))
            media_id = str(next(self._ids))
            container.status_code, container.media_id = "PUBLISHED", media_id
            self.quota_usage += 1
            shortcode = secrets.token_urlsafe(8).replace("-", "a").replace("_", "b")
            self.media[media_id] = {
                "id": media_id,
                "container_id": creation_id,
                "permalink": f"https://www.instagram.com/p/{shortcode}/",
                "params": container.params,
            }
        return Reply(200, {"id": media_id}, effect=True)

    def _limit(self, request: Request, version: str, user: str) -> Reply:
        self._user(user)
        with self._lock:
            row = {
                "quota_usage": self.quota_usage,
                "config": {"quota_total": self.quota_total, "quota_duration": 86400},
            }
        return Reply(200, {"data": [row]})

    def _read(self, request: Request, version: str, object_id: str) -> Reply:
        if object_id == self.ig_user_id:  # the IG user: id and the fields asked for
            # https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user
            fields = (request.param("fields") or "").split(",")
            return Reply(
                200, {"id": object_id, **({"username": self.username} if "username" in fields else {})}
            )
        with self._lock:
            container = self.containers.get(object_id)
            if container is not None:
                status = self._status(container, poll=True)
                body: Json = {"id": object_id, "status_code": status}
                if status == "ERROR":
                    body["status"] = "ERROR: Media upload failed (2207026)"
                return Reply(200, body)
            media = self.media.get(object_id)
            if media is not None:
                return Reply(200, {"id": object_id, "permalink": media["permalink"]})
        raise ApiError(
            400,
            graph_error(
                100,
                f"Unsupported get request. Object with ID '{object_id}' does not exist",
                kind="GraphMethodException",
            ),
        )

    def _insights(self, request: Request, version: str, media_id: str) -> Reply:
        metrics = [m for m in request.param("metric").split(",") if m]
        with self._lock:
            media = self.media.get(media_id)
            if media is None:
                raise ApiError(
                    400,
                    graph_error(
                        100,
                        f"Unsupported get request. Object with ID '{media_id}' does not exist",
                        kind="GraphMethodException",
                    ),
                )
            self._check_metrics(metrics, media)
            figures = self.insights.get(media_id) or DEFAULT_INSIGHTS
        data = [
            {
                "name": metric,
                "period": "lifetime",
                "values": [{"value": figures[metric]}],
                "id": f"{media_id}/insights/{metric}/lifetime",
            }
            for metric in metrics
            if figures.get(metric) is not None
        ]
        return Reply(200, {"data": data})

    def _check_metrics(self, metrics: list[str], media: Json) -> None:
        reel = str(media["params"].get("media_type") or "").upper() == "REELS"
        for n, metric in enumerate(metrics):
            if not metric or metric in DEPRECATED_METRICS or (metric in REEL_ONLY_METRICS and not reel):
                raise ApiError(
                    400,
                    graph_error(
                        100,
                        f"(#100) metric[{n}] must be one of the following values: "
                        + ", ".join(m for m in DEFAULT_INSIGHTS if reel or m not in REEL_ONLY_METRICS),
                    ),
                )
        if not metrics:
            raise ApiError(400, graph_error(100, "(#100) The parameter metric is required"))

    def _refresh(self, request: Request) -> Reply:
        if request.param("grant_type") != "ig_refresh_token":
            raise ApiError(400, graph_error(100, "Unsupported grant_type"))
        token = "IGAA" + secrets.token_urlsafe(32)
        with self._lock:
            if self._tokens is not None:
                self._tokens[token] = self.clock() + TOKEN_TTL
        return Reply(
            200, {"access_token": token, "token_type": "bearer", "expires_in": TOKEN_TTL}, effect=True
        )
