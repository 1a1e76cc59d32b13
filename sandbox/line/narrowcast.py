"""The fake LINE's narrowcast and its audiences for uploading user ids.

From messaging-api.yml (`narrowcast`, `getNarrowcastProgress`, `NarrowcastRequest`,
`Limit`, `NarrowcastProgressResponse`) and line-openapi's manage-audience.yml
(`createAudienceGroup`, `addAudienceToAudienceGroup`, `getAudienceData`,
`deleteAudienceGroup`; https://developers.line.biz/en/reference/messaging-api/#narrowcast-message):

- ``POST /v2/bot/audienceGroup/upload`` takes ``description`` (1-120 characters) and up to
  10,000 ``audiences[].id``; it answers 202 with the new ``audienceGroupId``. ``PUT`` adds up
  to 10,000 ids to an audience as a new job. An audience is ``IN_PROGRESS`` and each job
  ``QUEUED`` / ``WORKING`` until ``audience_seconds`` after the upload, then ``READY`` /
  ``FINISHED``; an unknown audience answers 400 ``audience group not found`` (the spec's
  example). ``DELETE`` removes one.
- ``POST /v2/bot/message/narrowcast`` is checked against ``NarrowcastRequest``; it honours
  ``X-Line-Retry-Key`` like push (409 with ``x-line-accepted-request-id`` for a repeat) and
  answers 202 ``{}`` with the request id in ``x-line-request-id``. ``forbidPartialDelivery``
  without ``upToRemainingQuota`` answers 400 (the spec: "can be set to true only if
  upToRemainingQuota is set to true").
- Progress: ``waiting`` for ``waiting_seconds`` after acceptance, ``sending`` for
  ``sending_seconds`` more, then ``succeeded`` or ``failed`` with ``errorCode`` 4 when an
  audience in the recipient has fewer than 50 ids, 2 when the target is empty, 5 when
  ``forbidPartialDelivery`` finds the month's quota short, and ``fail_narrowcast`` forces
  one (1 = internal error). A failed narrowcast never reaches the ``sending`` phase and
  costs no quota; a succeeded one charges its target at acceptance.

The fake's own choices where LINE documents nothing: a narrowcast naming an audience that
is unknown or not ``READY`` answers 400, one over the quota without ``upToRemainingQuota``
answers 429 (as a push does), an unknown request id's progress answers 404, and every id of
an audience counts as a recipient (the fake knows no blocked users).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from sandbox.line.records import (
    MONTHLY_LIMIT,
    Accepted,
    Json,
    LineError,
    LineReply,
    LineRequest,
    invalid_body,
)
from sandbox.line.spec import spec_errors
from sandbox.line.validation import check_messages

AUDIENCE_IDS_MAX = 10_000
AUDIENCE_MINIMUM = 50
NOT_FOUND = "audience group not found"


@dataclass
class Audience:
    audience_id: int
    description: str
    created: float
    jobs: list[tuple[float, int]]  # (uploaded at, ids added)
    ids: list[str] = field(default_factory=list)


@dataclass
class Narrowcast:
    accepted_at: float
    target: int
    error_code: int | None


class LineNarrowcasts:
    """Audiences and narrowcasts of the channel; callers hold the channel's lock."""

    def __init__(self, channel) -> None:
        self._channel = channel  # the LineChannel: clock, quota, retry keys
        self.audiences: dict[int, Audience] = {}
        self.narrowcasts: dict[str, Narrowcast] = {}
        self.audience_seconds = 1.0
        self.waiting_seconds = 1.0
        self.sending_seconds = 1.0
        self.forced_errors: list[int] = []
        self._next_id = 1_234_567_890_123

    # audiences

    def audience_create(self, request: LineRequest, request_id: str) -> LineReply:
        body = request.body
        description = body.get("description")
        errors = (
            []
            if isinstance(description, str) and 1 <= len(description) <= 120
            else [("description", "Length must be between 1 and 120")]
        )
        ids = self._ids(body, errors)
        if errors:
            raise invalid_body(errors)
        now = self._channel.clock()
        self._next_id += 1
        audience = Audience(self._next_id, description, now, [(now, len(ids))], ids)
        self.audiences[audience.audience_id] = audience
        answer = {
            "audienceGroupId": audience.audience_id,
            "createRoute": "MESSAGING_API",
            "type": "UPLOAD",
            "description": description,
            "created": int(now),
            "permission": "READ_WRITE",
            "expireTimestamp": int(now) + 180 * 24 * 3600,
            "isIfaAudience": False,
        }
        return LineReply(202, answer)

    def audience_add(self, request: LineRequest, request_id: str) -> LineReply:
        body = request.body
        if not isinstance(body, dict):
            raise LineError(400, "The request body must be a JSON object")
        errors: list[tuple[str, str]] = []
        ids = self._ids(body, errors, required=True)
        if not isinstance(body.get("audienceGroupId"), int):
            errors.append(("audienceGroupId", "May not be empty"))
        if errors:
            raise invalid_body(errors)
        audience = self._audience(body["audienceGroupId"])
        audience.ids += ids
        audience.jobs.append((self._channel.clock(), len(ids)))
        return LineReply(202, {})

    def audience_get(self, request: LineRequest, request_id: str, audience_id: str) -> LineReply:
        audience = self._audience(audience_id)
        now = self._channel.clock()
        ready = now - audience.created >= self.audience_seconds
        group = {
            "audienceGroupId": audience.audience_id,
            "type": "UPLOAD",
            "description": audience.description,
            "status": "READY" if ready else "IN_PROGRESS",
            "audienceCount": len(audience.ids) if ready else 0,
            "created": int(audience.created),
            "permission": "READ_WRITE",
            "isIfaAudience": False,
            "createRoute": "MESSAGING_API",
        }
        jobs = [
            {
                "audienceGroupJobId": audience.audience_id * 100 + n,
                "audienceGroupId": audience.audience_id,
                "description": audience.description,
                "type": "DIFF_ADD",
                "jobStatus": "FINISHED" if now - at >= self.audience_seconds else "WORKING",
                "audienceCount": count,
                "created": int(at),
            }
            for n, (at, count) in enumerate(audience.jobs)
        ]
        return LineReply(200, {"audienceGroup": group, "jobs": jobs})

    def audience_delete(self, request: LineRequest, request_id: str, audience_id: str) -> LineReply:
        self.audiences.pop(self._audience(audience_id).audience_id)
        return LineReply(200, {})

    def _ids(self, body: Json, errors: list[tuple[str, str]], *, required: bool = False) -> list[str]:
        audiences = body.get("audiences")
        if audiences is None and not required:
            return []
        if not isinstance(audiences, list) or len(audiences) > AUDIENCE_IDS_MAX:
            errors.append(("audiences", f"Size must be between 0 and {AUDIENCE_IDS_MAX}"))
            return []
        ids = [a.get("id") for a in audiences if isinstance(a, dict)]
        if len(ids) != len(audiences) or not all(isinstance(i, str) and i for i in ids):
            errors.append(("audiences", "Each audience must have an id"))
        return [i for i in ids if isinstance(i, str)]

    def _audience(self, audience_id) -> Audience:
        try:
            audience = self.audiences.get(int(audience_id))
        except (TypeError, ValueError):
            audience = None
        if audience is None:
            raise LineError(400, NOT_FOUND, details=[{"message": "AUDIENCE_GROUP_NOT_FOUND"}])
        return audience

    # narrowcast

    def narrowcast(self, request: LineRequest, request_id: str, key: str | None) -> LineReply:
        body = request.body
        errors = spec_errors(body, "NarrowcastRequest")
        own: list[tuple[str, str]] = []
        check_messages(body, own)
        errors += [(p, m) for p, m in own if p not in {prop for prop, _ in errors}]
        limit = body.get("limit") or {}
        if limit.get("forbidPartialDelivery") and not limit.get("upToRemainingQuota"):
            errors.append(("limit.forbidPartialDelivery", "Can be true only if upToRemainingQuota is true"))
        if errors:
            raise invalid_body(errors)
        channel = self._channel
        channel._check_retry_key(key)
        audiences: list[Audience] = []
        target = self._target(body.get("recipient"), audiences)
        if isinstance(limit.get("max"), int):
            target = min(target, limit["max"])
        code = self._error_code(audiences, target, limit)
        if code is None:
            left = channel._quota_value - channel._total_usage if channel._quota_type == "limited" else target
            if target > left and not limit.get("upToRemainingQuota"):
                raise LineError(429, MONTHLY_LIMIT)
            target = min(target, left)
            channel._total_usage += target
        if key is not None:
            channel._retry_keys[key] = Accepted(channel.clock(), request_id, None)
        self.narrowcasts[request_id] = Narrowcast(channel.clock(), target, code)
        return LineReply(202, {}, accepted=True)

    def _target(self, recipient, audiences: list[Audience]) -> int:
        if not isinstance(recipient, dict):
            raise LineError(400, "The recipient is required to send a narrowcast from the fake")
        return len(self._recipients(recipient, audiences))

    def _recipients(self, recipient: Json, audiences: list[Audience]) -> set[str]:
        """The ids a recipient object names (`not` against every uploaded id)."""
        if recipient.get("type") == "audience":
            audience = self._audience(recipient.get("audienceGroupId"))
            if self._channel.clock() - audience.created < self.audience_seconds:
                raise LineError(400, "The audience is not ready")
            audiences.append(audience)
            return set(audience.ids)
        if recipient.get("type") != "operator":
            raise LineError(400, f"The fake does not send to recipients of type {recipient.get('type')!r}")
        if "and" in recipient:
            parts = [self._recipients(r, audiences) for r in recipient["and"]]
            return set.intersection(*parts) if parts else set()
        if "or" in recipient:
            return set().union(*(self._recipients(r, audiences) for r in recipient["or"]))
        every = {i for audience in self.audiences.values() for i in audience.ids}
        return every - self._recipients(recipient.get("not") or {}, audiences)

    def _error_code(self, audiences: list[Audience], target: int, limit: Json) -> int | None:
        if self.forced_errors:
            return self.forced_errors.pop(0)
        if any(len(audience.ids) < AUDIENCE_MINIMUM for audience in audiences):
            return 4
        if target == 0:
            return 2
        channel = self._channel
        if channel._quota_type == "limited" and limit.get("forbidPartialDelivery"):
            if channel._total_usage + target > channel._quota_value:
                return 5
        return None

    def progress(self, request: LineRequest, request_id: str) -> LineReply:
        wanted = request.query().get("requestId", [""])[0]
        narrowcast = self.narrowcasts.get(wanted)
        if narrowcast is None:
            raise LineError(404, "Not found")
        return LineReply(200, self._progress(narrowcast))

    def _progress(self, narrowcast: Narrowcast) -> Json:
        accepted = narrowcast.accepted_at
        elapsed = self._channel.clock() - accepted
        answer: Json = {"phase": "waiting", "acceptedTime": _iso(accepted)}
        if elapsed < self.waiting_seconds:
            return answer
        if narrowcast.error_code is not None:
            completed = accepted + self.waiting_seconds
            return answer | {
                "phase": "failed",
                "successCount": 0,
                "failureCount": 0,
                "targetCount": narrowcast.target,
                "failedDescription": FAILED_DESCRIPTIONS[narrowcast.error_code],
                "errorCode": narrowcast.error_code,
                "completedTime": _iso(completed),
            }
        if elapsed < self.waiting_seconds + self.sending_seconds:
            return answer | {"phase": "sending", "targetCount": narrowcast.target}
        completed = accepted + self.waiting_seconds + self.sending_seconds
        counts = {"successCount": narrowcast.target, "failureCount": 0, "targetCount": narrowcast.target}
        return answer | {"phase": "succeeded", **counts, "completedTime": _iso(completed)}


# The fake's texts (LINE's failedDescription wording is undocumented); the codes' meanings
# are the spec's.
FAILED_DESCRIPTIONS = {
    1: "An internal error occurred.",
    2: "There weren't enough recipients.",
    3: "A request that has already been accepted was retried.",
    4: "An audience of less than 50 recipients is included as a condition of sending.",
    5: "Delivery was canceled to prevent delivering messages only to a subset of the target audience.",
}


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
