"""In-memory fake of the LINE Messaging API, served on loopback.

Used by the unit and end-to-end tests, by the benchmarks and by the ``sandbox`` process of
``make run``. Client code must not be able to tell it from ``api.line.me``, so it follows
LINE's docs (https://developers.line.biz/en/reference/messaging-api/) and OpenAPI specs
(``line/line-openapi``, https://github.com/line/line-openapi: ``messaging-api.yml``,
``insight.yml``; a copy is in tests/contracts/line-openapi/).
It has to serve well over 1,000 requests/s on loopback, so handlers are cheap and nothing is
logged per request above DEBUG.

What it models, and the choices made where LINE's behaviour is undocumented:

- One channel. ``channel_tokens`` lists the accepted ``Authorization: Bearer`` tokens (None
  accepts any non-empty token); they all share one quota, one set of groups and one retry-key
  space.
- Every answer carries ``x-line-request-id`` (a uuid4); bodies are JSON, errors have LINE's
  ``ErrorResponse`` shape. The error *texts* are LINE's where a public source quotes one and the
  fake's own otherwise: clients must match on status and headers, never on text.
- The validate endpoints (``/v2/bot/message/validate/{push,multicast,broadcast,narrowcast,reply}``)
  judge ``{"messages": [...]}`` by messaging-api.yml's ``ValidateMessageRequest`` and Message
  schemas (spec.py, the contract tests' validator), then by the documented limits the spec
  leaves out (below); they send nothing and cost no quota.
- Send bodies are validated pragmatically (the required fields of every message type, text
  length in UTF-16 code units, https media URLs, list sizes); schema problems answer 400
  ``{"message": "The request body has N error(s)", "details": [{"message", "property"}]}``.
  A ``to`` that is not a LINE id (``U…`` user, ``C…`` group, ``R…`` room; multicast: users
  only) answers 400 ``The property, 'to', in the request body is invalid`` without details.
- Groups: ``add_group`` registers groups. While none is registered a push to any ``C…`` id is
  accepted and counts as ``DEFAULT_MEMBER_COUNT`` recipients; once one is registered, a push
  to an unregistered group answers 400. Group summary and member count answer 404 for any
  unregistered group. ``add_room`` registers a room's member count, which its member count
  endpoint answers (404 for an unregistered room); a push to any ``R…`` room is accepted and
  counts its registered members, else ``DEFAULT_MEMBER_COUNT``.
- ``X-Line-Retry-Key`` is honoured on push, multicast and narrowcast; any other endpoint
  answers 400 when it is sent. A key must be a canonical (8-4-4-4-12) hexadecimal UUID, compared
  case-insensitively. A key stays accepted for ``RETRY_KEY_TTL`` seconds (24 h) after its
  first accepted request, measured with ``FakeLine.clock``. A repeat answers 409 with
  ``x-line-accepted-request-id`` and, for a push, the original ``sentMessages``; it is not
  sent again and costs no quota.
- Quota: messages are counted per recipient, not per message object
  (https://developers.line.biz/en/docs/messaging-api/pricing/: a push of 4 messages to a
  5-person chat counts 5): push to a user 1, to a group its member count, multicast
  ``len(to)``; replies are free. The quota starts as ``{"type": "none"}`` (no
  target limit) so that benchmarks never run out; ``set_quota`` sets a limit, and a push or
  multicast that would exceed it answers 429 ``You have reached your monthly limit.`` and is
  not sent. There is no month rollover.
- ``sentMessages`` of a push or reply carry a ``quoteToken`` for the types LINE lets quote;
  a multicast answers ``{}`` (messaging-api.yml ``MulticastResponse``). A text, textV2 or
  sticker message may carry ``quoteToken`` (a non-empty string, else 400 with details); one the
  fake did not issue answers 400 ``The quote token is invalid`` (LINE's answer to a foreign
  or expired token is undocumented) and sends nothing.
- Reply tokens are not issued by the fake: any non-empty token is accepted once; reusing one
  answers 400 ``Invalid reply token``.
- Coupons (``/v2/bot/coupon``): a create body is checked against the spec's
  ``CouponCreateRequest`` (400 with details) and answers a new ``couponId``; list (``status``,
  ``limit`` 1-100, ``start`` as the page token), detail (404 for an unknown id) and close
  (410 Gone for a closed coupon) keep the spec's response shapes. Coupons are kept until
  ``reset``; a ``coupon`` message is sent whatever its ``couponId`` (LINE's answer to an
  unknown or closed coupon is undocumented).
- Narrowcast (sandbox/line/narrowcast.py): audiences for uploading user ids, a 202 with the
  request id, progress phases that advance with ``clock`` (``set_narrowcast_timing``),
  errorCode 4 for an audience under 50 ids, 5 for ``forbidPartialDelivery`` over the quota,
  ``fail_narrowcast`` for any other; ``audiences`` lists what was uploaded.
- Narrowcast (narrowcast.py): audiences for uploading user ids, a 202 with the request id,
  progress phases that advance with ``clock`` (``set_narrowcast_timing``), errorCode 4 for
  an audience under 50 ids, 5 for ``forbidPartialDelivery`` over the quota,
  ``fail_narrowcast`` for any other; ``audiences()`` lists what was uploaded.
- ``numOfCustomAggregationUnits`` counts the distinct unit names of accepted sends.
  Per-unit statistics come from ``set_unit_stats``; an unknown unit has all-null figures.
- ``fail_next`` faults apply after authentication and before routing, in the order added.
  A status below 400 (use 0) only delays: the request is served normally after ``delay``
  seconds, so a client that timed out meanwhile still had its message sent. An error status
  answers that error after ``delay`` and sends nothing, unless ``then_accept=True``: then the
  request is processed first (sent, quota charged, retry key remembered) and only the answer
  is replaced. A delayed error is therefore a timeout in which nothing was sent.
- ``set_chaos`` (the chaos campaign, ``make chaos``) fails a share of the pushes with 500
  (nothing sent) and hangs another share: processed and recorded at once, answered only
  after ``hang_seconds``, a timeout in which the message was sent. The draws come from a
  seeded ``random.Random``; ``chaos_counts`` says how many of each were drawn.

The package: records.py (limits, texts, records), validation.py (send bodies), spec.py (the
OpenAPI spec as a validator), coupons.py, narrowcast.py, state.py
(the channel), api.py (the endpoints), server.py (FakeLine on the shared HTTP base of
sandbox/http.py), cli.py (``python -m sandbox.line --help``).
"""

from sandbox.line.records import (
    AUTH_FAILED,
    DEFAULT_MEMBER_COUNT,
    MAX_MESSAGES,
    MAX_MULTICAST_RECIPIENTS,
    MAX_TEXT_LENGTH,
    RETRY_KEY_TTL,
    RecordedLineRequest,
)
from sandbox.line.server import FakeLine

__all__ = [
    "AUTH_FAILED",
    "DEFAULT_MEMBER_COUNT",
    "MAX_MESSAGES",
    "MAX_MULTICAST_RECIPIENTS",
    "MAX_TEXT_LENGTH",
    "RETRY_KEY_TTL",
    "FakeLine",
    "RecordedLineRequest",
]
