"""In-memory fake of Nulab Backlog API v2 and its project webhooks, served on loopback.

Used by the tests and by the ``sandbox`` process of ``make run``. Client code must not be
able to tell it from Backlog, so it follows Backlog's API docs (https://developer.nulab.com/docs/backlog/)
and the official client's types (``nulab/backlog-js:src/entity.ts``, ``src/types.ts``). Where Backlog's
behaviour is undocumented the fake takes the strict reading:

- ``minId`` / ``maxId`` are exclusive bounds.
- An update that only carries a comment records a type-3 activity; an update that changes
  nothing and has no comment records nothing.
- Every update also stores a comment holding its ``changeLog`` (``content`` is null when no
  text was given), as Backlog's issue history does.
- Documented parameters the fake does not model answer 400 saying so, so that no test can
  silently rely on an ignored filter. Undocumented parameters answer 400 as in Backlog.
- Custom-field entries in a webhook's ``changes[]`` use ``type: "customAttribute"`` and the
  field's name (UNCONFIRMED for Backlog; consumers re-read the issue).
- Rate-limit headers are counted per group (read, update, search) and window; limits are
  enforced only after ``set_rate_limits`` (``--read-limit`` / ``--update-limit``), then a
  spent group answers 429 as Backlog does. One-off 429s: ``fail_next``.
- Every API call answers after ``latency`` (by default 150-300 ms, drawn per call, as
  Backlog answers); ``latency=0`` for tests that need speed, ``set_latency`` to change it.
- ``set_outages`` takes windows of wall-clock time in which every API call answers 503
  and changes nothing (the chaos campaign's flapping Backlog, ``make chaos``).

The package: records.py (users, defaults, records), state.py (the space and a person's
writes), webhooks.py, routing.py, api.py (API v2), ui.py (HTML), server.py (FakeBacklog on
the shared HTTP base of sandbox/http.py), cli.py (``python -m sandbox.backlog --help``).
"""

from sandbox.backlog.records import (
    BOT,
    DEFAULT_CUSTOM_FIELDS,
    DEFAULT_STATUSES,
    HUMAN,
    JST,
    NEW_PROJECT_STATUSES,
    RecordedRequest,
)
from sandbox.backlog.server import REAL_LATENCY, FakeBacklog
from sandbox.backlog.ui import demo_description

__all__ = [
    "NEW_PROJECT_STATUSES",
    "BOT",
    "DEFAULT_CUSTOM_FIELDS",
    "DEFAULT_STATUSES",
    "HUMAN",
    "JST",
    "REAL_LATENCY",
    "FakeBacklog",
    "RecordedRequest",
    "demo_description",
]
