"""From a Backlog activity to the right schedule or the right comment (seed 000/001).

Webhooks are hints: every decision re-reads the issue from the API and compares it
with what automedia accepted at approval time. Decisions are state-based, so an
event that arrives twice, late, or because automedia itself changed the issue
never acts twice.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from backlog_bridge.client import (
    BacklogClient,
    BacklogError,
    InvalidIdentifier,
    id_valid,
    issue_key_valid,
    project_key_valid,
    shared_client,
)
from backlog_bridge.models import (
    HANDLED_TYPES,
    TYPE_BULK_UPDATED,
    TYPE_COMMENTED,
    TYPE_DELETED,
    BacklogEvent,
)
from backlog_bridge.parser import ParsedTask, content_fingerprint, parse_issue, parse_publish_at
from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.models import (
    FIELD_DELIVERED_AT,
    STATUS_APPROVED,
    STATUS_DEFAULT_REVERT,
    STATUS_ERROR,
    ContentTask,
    DeliverySchedule,
)
from deliveries.services import schedule_delete, schedule_upsert

logger = logging.getLogger(__name__)

MIN_LEAD = timedelta(seconds=5)  # seed 000: at(max(投稿日時, now+5s))
MAX_EVENT_ATTEMPTS = 5
EVENT_LEASE = timedelta(minutes=2)  # how long a drain holds an event it is processing
EVENT_BATCH = 50  # events read per round of a drain
DRAIN_BUDGET_SECONDS = 60.0  # a drain hands what is left to a new drain after this long
STRANDED_AFTER = timedelta(seconds=2)  # run_scheduler drains events pending this long
CLAIM_ROUNDS = 3
ISSUE_KEY_MAX = BacklogEvent._meta.get_field("issue_key").max_length


class PayloadError(ValueError):
    """A webhook body automedia cannot accept (answered with 400 and this reason)."""


class BacklogConfigError(Exception):
    """The Backlog project lacks something automedia needs (a status, a field)."""


class EventIgnored(Exception):
    """Nothing to act on (e.g. the comment is gone from Backlog): the event ends `ignored`."""


# -- receiving -------------------------------------------------------------------


def webhook_validate(*, tenant: Tenant, payload: object) -> dict:
    if not isinstance(payload, dict):
        raise PayloadError("body must be a JSON object (one Backlog activity)")
    if not id_valid(payload.get("id")):
        raise PayloadError("activity `id` (positive integer) is missing")
    if not _small_int(payload.get("type")):
        raise PayloadError("activity `type` (integer) is missing")
    project = payload.get("project")
    project_key = project.get("projectKey") if isinstance(project, dict) else None
    if project_key != tenant.backlog_project_key:
        raise PayloadError(f"project key {_shown(project_key)} does not belong to tenant {tenant.slug!r}")
    if payload["type"] in HANDLED_TYPES:
        if not isinstance(payload.get("content"), dict):
            raise PayloadError("activity `content` (object) is missing")
        activity_identifiers_check(tenant=tenant, activity=payload)
    return payload


def activity_identifiers_check(*, tenant: Tenant, activity: dict) -> None:
    """Every identifier of a handled activity that goes into a Backlog URL has its format,
    so no payload can steer a request elsewhere (`key_id: "1/../OTHER-1"`); raises
    PayloadError. Run at the receiver and again before a stored event is processed."""
    if not project_key_valid(tenant.backlog_project_key):
        raise PayloadError(
            f"tenant project key {_shown(tenant.backlog_project_key)} is not a Backlog project key"
        )
    content = activity["content"]
    if activity["type"] == TYPE_BULK_UPDATED:
        links = content.get("link")
        if not isinstance(links, list) or not all(isinstance(link, dict) for link in links):
            raise PayloadError("`content.link` (list of objects) is missing")
        for link in links:
            _issue_identifiers_check(tenant, link, "content.link[]")
        return
    _issue_identifiers_check(tenant, content, "content")
    if activity["type"] == TYPE_COMMENTED and not id_valid(_comment_id(content)):
        raise PayloadError(
            f"`content.comment.id` must be a positive integer, not {_shown(_comment_id(content))}"
        )


def _issue_identifiers_check(tenant: Tenant, content: dict, where: str) -> None:
    if not id_valid(content.get("key_id")):
        raise PayloadError(
            f"`{where}.key_id` must be a positive integer, not {_shown(content.get('key_id'))}"
        )
    if "id" in content and not id_valid(content["id"]):
        raise PayloadError(f"`{where}.id` must be a positive integer, not {_shown(content['id'])}")
    issue_key = _issue_key(tenant, content)
    if not issue_key_valid(issue_key) or len(issue_key) > ISSUE_KEY_MAX:
        raise PayloadError(f"issue key {_shown(issue_key)} is not valid")


def _comment_id(content: dict) -> object:
    comment = content.get("comment")
    return comment.get("id") if isinstance(comment, dict) else None


def _small_int(value: object) -> bool:
    # The type column is a PositiveSmallIntegerField.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 32767


def _shown(value: object) -> str:
    """A payload value in an error answer: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_EVENT_COLUMNS = (
    "tenant_id, activity_id, type, issue_key, payload, source, outcome, detail, attempts, received_at"
)
_INSERT_EVENT = (
    "INSERT INTO {table} (" + _EVENT_COLUMNS + ") VALUES (%s, %s, %s, %s, %s, %s, %s, '', 0, %s)"
    " ON CONFLICT (tenant_id, activity_id) DO NOTHING RETURNING id"
)
# The webhook's: the tenant row must still be active and hold the webhook token (as stored,
# encrypted) the receiver checked, read maybe minutes ago. A rotation writes a new
# ciphertext, so an old token stores nothing, in the same single statement.
_INSERT_WEBHOOK_EVENT = (
    "INSERT INTO {table} (" + _EVENT_COLUMNS + ") SELECT %s, %s, %s, %s, %s, %s, %s, '', 0, %s"
    " FROM {tenants} WHERE id = %s AND is_active AND webhook_token = %s"
    " ON CONFLICT (tenant_id, activity_id) DO NOTHING RETURNING id"
)


def activity_handled(activity: dict) -> bool:
    """Whether automedia acts on this activity type (others are stored as ignored)."""
    return activity["type"] in HANDLED_TYPES


def activity_store(
    *, tenant: Tenant, activity: dict, source: str, stored_token: str | None = None
) -> int | None:
    """Store a raw activity once per (tenant, activity id): the new row's id, or None
    when it was stored before (a duplicate) or, given `stored_token` (the webhook token's
    column as the receiver read it), when the tenant no longer holds it.

    One `INSERT … ON CONFLICT DO NOTHING RETURNING` (SQLite ≥ 3.35 and PostgreSQL): no
    read before, and no savepoint, on the webhook's hot path.
    """
    outcome = BacklogEvent.Outcome.PENDING if activity_handled(activity) else BacklogEvent.Outcome.IGNORED
    field = BacklogEvent._meta.get_field
    params = [
        tenant.pk,
        activity["id"],
        activity["type"],
        _issue_key(tenant, activity.get("content") or {})[:ISSUE_KEY_MAX],  # checked before use
        field("payload").get_db_prep_save(activity, connection),
        source,
        outcome,
        field("received_at").get_db_prep_save(timezone.now(), connection),
    ]
    table = BacklogEvent._meta.db_table
    if stored_token is None:
        row = _insert_event(_INSERT_EVENT.format(table=table), params)
    else:
        sql = _INSERT_WEBHOOK_EVENT.format(table=table, tenants=Tenant._meta.db_table)
        row = _insert_event(sql, [*params, tenant.pk, stored_token])
    return None if row is None else row[0]


def _insert_event(sql: str, params: list) -> tuple | None:
    """Run the event INSERT without Django's health-check round trip before it.

    With CONN_HEALTH_CHECKS, a request's first query is preceded by a `SELECT 1` that
    checks the kept-alive connection: a whole round trip, about a third of a webhook's
    database time on PostgreSQL. The INSERT is idempotent (ON CONFLICT DO NOTHING), so
    outside a transaction it goes first and, if the connection proves dead, is sent
    once more on a new one. Any other database error is raised as it is.
    """
    if connection.in_atomic_block:
        return _fetchone(sql, params)  # a transaction's connection cannot be replaced
    connection.health_check_done = True
    try:
        return _fetchone(sql, params)
    except (InterfaceError, OperationalError):
        if connection.is_usable():
            raise
        connection.close()
    return _fetchone(sql, params)


def _fetchone(sql: str, params: list) -> tuple | None:
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    # PostgreSQL: a prepared statement with server-side parameters. PostgreSQL parses
    # and plans the INSERT once per connection, and the payload travels as a parameter
    # instead of an escaped literal (Django's cursors bind on the client). This psycopg
    # cursor bypasses Django's query log, not its error translation.
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchone()


def webhook_accept(*, tenant: Tenant, payload: object, stored_token: str | None = None) -> str:
    """Validate, store and hand to a drain; returns "accepted", "duplicate" or "ignored".

    The stored event row is the queue: one INSERT (autocommit) is all a webhook
    writes. Processing is a django-q2 drain task that takes every pending event.
    With `stored_token`, "duplicate" also means the tenant no longer holds that token.
    """
    activity = webhook_validate(tenant=tenant, payload=payload)
    if activity_store(tenant=tenant, activity=activity, source="webhook", stored_token=stored_token) is None:
        return "duplicate"
    if not activity_handled(activity):
        return "ignored"
    events_drain_soon()
    return "accepted"


_drain_requested_at = float("-inf")  # time.monotonic() of this process's last drain enqueue


def events_drain_soon() -> bool:
    """Enqueue a drain task, at most one per BACKLOG_EVENT_BATCH_SECONDS per process.

    A drain takes every pending event, so during a burst one task per window is
    enough. An event stored just after a drain's last look, with no webhook after it
    to enqueue the next drain, is taken by `events_stranded_drain` (run_scheduler,
    after STRANDED_AFTER) and, failing that, by the catch-up job's retry.
    """
    global _drain_requested_at
    now = time.monotonic()
    if now - _drain_requested_at < settings.BACKLOG_EVENT_BATCH_SECONDS:
        return False
    _drain_requested_at = now
    _drain_enqueue()
    return True


def _drain_enqueue() -> None:
    from django_q.tasks import async_task

    enqueue = lambda: async_task("backlog_bridge.tasks.process_events")  # noqa: E731
    if settings.REDIS_URL:
        transaction.on_commit(enqueue)  # Redis is outside any transaction the caller holds
    else:
        enqueue()  # the ORM broker's row commits (or not) with the caller's transaction


def _claim_free(now: datetime) -> Q:
    return Q(claimed_until__isnull=True) | Q(claimed_until__lte=now)


def _claimable(now: datetime):
    return BacklogEvent.objects.filter(
        _claim_free(now),
        outcome=BacklogEvent.Outcome.PENDING,
        attempts__lt=MAX_EVENT_ATTEMPTS,
    )


def events_drain(*, budget: float = DRAIN_BUDGET_SECONDS) -> int:
    """Process pending events in arrival order until none is left; returns how many.

    Several drains may run at once: each event is claimed by `event_process`, so
    they share the work. The worker's kept-alive Backlog client per tenant serves them. After `budget` seconds the rest goes to a new drain,
    so a long burst never holds one worker past the task timeout.
    """
    deadline = time.monotonic() + budget
    processed = 0
    while batch := list(
        _claimable(timezone.now()).order_by("pk").values_list("pk", "tenant_id")[:EVENT_BATCH]
    ):
        tenants = Tenant.objects.in_bulk({tenant_id for _, tenant_id in batch})
        for event_id, tenant_id in batch:
            if _drain_one(event_id, tenants[tenant_id]):
                processed += 1
        if time.monotonic() > deadline:
            _drain_enqueue()
            break
    return processed


def _drain_one(event_id: int, tenant: Tenant) -> bool:
    """One event of a drain; an unexpected error fails that event, not the drain."""
    try:
        result = event_process(event_id=event_id, client=shared_client(tenant), tenant=tenant)
        return result != CLAIMED_ELSEWHERE
    except Exception as exc:
        logger.exception("backlog event %s failed", event_id)
        BacklogEvent.objects.filter(pk=event_id).update(
            outcome=BacklogEvent.Outcome.FAILED,
            detail=f"{type(exc).__name__}: {exc}"[:2000],
            processed_at=timezone.now(),
            claimed_until=None,
        )
        return True


_stranded_checked_at = float("-inf")


def events_stranded_drain(*, now: datetime) -> bool:
    """run_scheduler's look (at most every STRANDED_AFTER) for events no drain took:
    enqueue one when an event has been pending longer than STRANDED_AFTER."""
    global _stranded_checked_at
    tick = time.monotonic()
    if tick - _stranded_checked_at < STRANDED_AFTER.total_seconds():
        return False
    _stranded_checked_at = tick
    if not _claimable(now).filter(received_at__lte=now - STRANDED_AFTER).exists():
        return False
    _drain_enqueue()
    return True


def _issue_key(tenant: Tenant, content: dict) -> str:
    key_id = content.get("key_id")
    return f"{tenant.backlog_project_key}-{key_id}" if key_id is not None else ""


# -- processing ------------------------------------------------------------------


CLAIMED_ELSEWHERE = "claimed elsewhere"


def event_process(*, event_id: int, client: BacklogClient | None = None, tenant: Tenant | None = None) -> str:
    """Process one stored event (pending, or failed and retried) under a claim: the
    conditional UPDATE must hit the row, so two workers never process it at once.
    `tenant`: the event's tenant when the caller has it loaded (a drain)."""
    now = timezone.now()
    claimed = (
        BacklogEvent.objects.filter(
            _claim_free(now),
            pk=event_id,
            outcome__in=[BacklogEvent.Outcome.PENDING, BacklogEvent.Outcome.FAILED],
        ).update(attempts=F("attempts") + 1, claimed_until=now + EVENT_LEASE)
        == 1
    )
    if tenant is None:
        event = BacklogEvent.objects.select_related("tenant").get(pk=event_id)
    else:
        event = BacklogEvent.objects.get(pk=event_id, tenant=tenant)
        event.tenant = tenant  # no join, no second decryption of its secrets
    if not claimed:
        done = (BacklogEvent.Outcome.DONE, BacklogEvent.Outcome.IGNORED)
        return event.outcome if event.outcome in done else CLAIMED_ELSEWHERE
    own_client = client is None
    client = client or BacklogClient.for_tenant(event.tenant)
    try:
        detail = _route(event, client)
    except (EventIgnored, InvalidIdentifier) as exc:
        # Nothing will ever come of it: not retried, and no error to alert on.
        _event_finish(event, BacklogEvent.Outcome.IGNORED, str(exc))
        return BacklogEvent.Outcome.IGNORED
    except (BacklogError, BacklogConfigError, ConcurrentChange) as exc:
        _event_finish(event, BacklogEvent.Outcome.FAILED, str(exc))
        level = logging.ERROR if event.attempts >= MAX_EVENT_ATTEMPTS else logging.WARNING
        logger.log(level, "backlog event %s failed: %s", event, exc)
        return BacklogEvent.Outcome.FAILED
    finally:
        if own_client:
            client.close()
    _event_finish(event, BacklogEvent.Outcome.DONE, detail)
    return BacklogEvent.Outcome.DONE


def _event_finish(event: BacklogEvent, outcome: str, detail: str) -> None:
    BacklogEvent.objects.filter(pk=event.pk).update(
        outcome=outcome, detail=detail[:2000], processed_at=timezone.now(), claimed_until=None
    )


def _route(event: BacklogEvent, client: BacklogClient) -> str:
    _stored_event_check(event)
    tenant, content = event.tenant, event.payload.get("content") or {}
    if event.type == TYPE_BULK_UPDATED:
        keys = [_issue_key(tenant, link) for link in content.get("link") or []]
        return "; ".join(f"{k}: {issue_reconcile(tenant=tenant, issue_key=k, client=client)}" for k in keys)
    if event.type == TYPE_DELETED:
        return issue_forget(tenant=tenant, issue_key=event.issue_key)
    if event.type == TYPE_COMMENTED:
        from backlog_bridge.command_runner import comment_handle  # imports the delivery side

        return comment_handle(event=event, client=client)
    if _own_echo(event, client):
        return "own change, already applied"
    return issue_reconcile(tenant=tenant, issue_key=event.issue_key, client=client)


def _stored_event_check(event: BacklogEvent) -> None:
    """The receiver's identifier checks again: an event stored before they existed (or
    taken by the catch-up) must not put a payload's text into a URL either."""
    try:
        if not isinstance(event.payload.get("content"), dict):
            raise PayloadError("activity `content` (object) is missing")
        activity_identifiers_check(tenant=event.tenant, activity={**event.payload, "type": event.type})
    except PayloadError as exc:
        raise EventIgnored(f"invalid payload: {exc}") from exc
    if event.type != TYPE_BULK_UPDATED and event.issue_key != _issue_key(
        event.tenant, event.payload["content"]
    ):
        raise EventIgnored(f"invalid payload: stored issue key {_shown(event.issue_key)} does not match")


def _own_echo(event: BacklogEvent, client: BacklogClient) -> bool:
    """The webhook of a status change automedia made itself (a write-back, a revert)
    whose result the mirror already holds: nothing to decide, so no Backlog read.

    Anything else — another user, a body edit, a status the mirror does not hold —
    goes through the full reconcile."""
    changes = (event.payload.get("content") or {}).get("changes") or []
    user = event.payload.get("createdUser") or {}
    status = next((c.get("new_value") for c in changes if c.get("field") == "status"), None)
    if status is None or any(c.get("field") in ("description", "summary") for c in changes):
        return False
    task = ContentTask.objects.filter(tenant=event.tenant, issue_key=event.issue_key).first()
    if task is None or str(task.status_id) != str(status):
        return False
    try:
        return user.get("id") is not None and user.get("id") == client.myself().get("id")
    except BacklogError:
        return False


def issue_forget(*, tenant: Tenant, issue_key: str) -> str:
    task = ContentTask.objects.filter(tenant=tenant, issue_key=issue_key).first()
    if task is None:
        return "unknown issue deleted"
    removed = schedule_delete(task=task)
    ContentTask.objects.filter(pk=task.pk).update(deleted_at=timezone.now())
    return "deleted; schedule removed" if removed else "deleted"


# -- reconciling one issue --------------------------------------------------------


@dataclass
class IssueState:
    """The issue as Backlog says it is now (the authority)."""

    issue_id: int
    summary: str
    description: str
    status_id: int
    status_name: str
    parsed: ParsedTask
    fingerprint: str
    delivered_at: datetime | None

    @property
    def approved(self) -> bool:
        return self.status_name == STATUS_APPROVED


class ConcurrentChange(Exception):
    """Another process kept changing the same task; the event is retried later."""


def issue_read(*, client: BacklogClient, issue_key: str) -> IssueState | None:
    try:
        issue = client.get_issue(issue_key)
    except BacklogError as exc:
        if exc.status == 404:
            return None
        raise
    return issue_state(issue)


def issue_state(issue: dict) -> IssueState:
    """An IssueState from Backlog's issue JSON (get-issue or the issue list)."""
    custom_fields = issue.get("customFields") or []
    description = issue.get("description") or ""
    return IssueState(
        issue_id=issue["id"],
        summary=issue.get("summary") or "",
        description=description,
        status_id=issue["status"]["id"],
        status_name=issue["status"]["name"],
        parsed=parse_issue(description=description, custom_fields=custom_fields),
        fingerprint=content_fingerprint(description),
        delivered_at=_delivered_at(custom_fields),
    )


def _delivered_at(custom_fields: list[dict]) -> datetime | None:
    value = next((f.get("value") for f in custom_fields if f.get("name") == FIELD_DELIVERED_AT), None)
    if not value or not isinstance(value, str):
        return None
    try:
        return parse_publish_at(value)
    except ValueError:
        return timezone.now()  # unreadable, but present: it was delivered


def issue_reconcile(
    *, tenant: Tenant, issue_key: str, client: BacklogClient, issue: dict | None = None
) -> str:
    """Bring automedia's schedule for one issue in line with Backlog; returns what was done.

    `issue`: Backlog's JSON for it when the caller just read it (the scan's issue
    list), saving one GET on the first round.
    """
    for _ in range(CLAIM_ROUNDS):
        state = issue_state(issue) if issue is not None else issue_read(client=client, issue_key=issue_key)
        issue = None  # a second round must read afresh
        if state is None:
            return issue_forget(tenant=tenant, issue_key=issue_key)
        task, _ = ContentTask.objects.get_or_create(tenant=tenant, issue_key=issue_key)
        decision = _decide(task, state, tenant)
        if _claim(task, state):
            return ACTIONS[decision.action](
                tenant=tenant, task=task, state=state, client=client, reason=decision.reason
            )
    raise ConcurrentChange(f"{issue_key}: changed concurrently {CLAIM_ROUNDS} times")


@dataclass(frozen=True)
class Decision:
    action: str
    reason: str = ""


def _decide(task: ContentTask, state: IssueState, tenant: Tenant) -> Decision:
    schedule = DeliverySchedule.objects.filter(task=task).first()
    if schedule is not None and _delivery_owns(schedule):
        # A delivery in flight (or writing back) owns the row; it re-checks Backlog
        # before every send, and its own status change must not look like a revert.
        return Decision("none")
    has_schedule = schedule is not None
    if not state.approved:
        return Decision("unschedule" if has_schedule else "none")
    if state.delivered_at:
        return Decision("none" if task.is_approved() else "already_delivered")
    if not (has_schedule and task.is_approved() and task.approved_at):
        return Decision("register")
    if state.fingerprint != task.approval_fingerprint:
        template = str(state.parsed.template or "")
        if template != task.approved_template_ref:
            return Decision(
                "invalidate",
                f"テンプレ参照が変更されました（{task.approved_template_ref} → {template or 'なし'}）",
            )
        return Decision("invalidate", "承認後に本文が変更されました")
    if state.parsed.publish_at != task.approved_publish_at:
        change = (
            f"投稿日時が変更されました（{_fmt(task.approved_publish_at)} → {_fmt(state.parsed.publish_at)}）"
        )
        if tenant.publish_time_policy == Tenant.PublishTimePolicy.RESCHEDULE and state.parsed.ok:
            return Decision("reschedule", change)
        return Decision("invalidate", change)
    return Decision("none")


def _delivery_owns(schedule: DeliverySchedule) -> bool:
    in_flight = schedule.lease_until is not None and schedule.lease_until > timezone.now()
    return in_flight or schedule.stage == DeliverySchedule.Stage.WRITEBACK


def _fmt(when: datetime | None) -> str:
    return fmt_jst(when) if when else "なし"


def _claim(task: ContentTask, state: IssueState) -> bool:
    """Write the mirror and move the version on; False if another process got there first."""
    parsed = state.parsed
    claimed = ContentTask.objects.filter(pk=task.pk, version=task.version).update(
        version=F("version") + 1,
        issue_id=state.issue_id,
        summary=state.summary[:500],
        description=state.description,
        status_id=state.status_id,
        status_name=state.status_name,
        channel=parsed.channel or "",
        publish_at=parsed.publish_at,
        template_ref=str(parsed.template or ""),
        parsed=parsed.to_json(),
        parse_errors=parsed.errors,
        content_fingerprint=state.fingerprint,
        # Follows Backlog: a manager clears 自動配信実行日時 to allow a resend (seed 000).
        delivered_at=state.delivered_at,
        deleted_at=None,
        last_synced_at=timezone.now(),
    )
    if claimed:
        task.refresh_from_db()
    return bool(claimed)


# -- actions ---------------------------------------------------------------------


def _act_none(**_) -> str:
    return "no change"


def _act_unschedule(*, tenant, task, state, client, reason) -> str:
    if not schedule_delete(task=task):
        return "no change"
    _comment(
        client,
        task,
        f"[automedia] 状態が「{state.status_name}」に変わったため、配信予約を取り消しました。",
    )
    return "schedule deleted"


def _act_register(*, tenant, task, state, client, reason) -> str:
    parsed = state.parsed
    if not parsed.ok:
        problems = "\n".join(f"- {e}" for e in parsed.errors)
        return _reject(client, task, f"課題の内容に問題があるため配信を予約できません。\n{problems}")
    verdict = tenant.quiet_hours_config().check(parsed.publish_at)
    publish_at, note = parsed.publish_at, ""
    if verdict.inside:
        if tenant.quiet_hours_config().mode == "reject":
            return _reject(client, task, verdict.message)
        publish_at, note = verdict.window_end, f"\n{verdict.message}"
    schedule = _schedule(task, state, publish_at, DeliverySchedule.Reason.APPROVAL, new_approval=True)
    _task_approved_post(task)
    _comment(
        client,
        task,
        f"[automedia] 配信を予約しました: {fmt_jst(schedule.due_at)}（チャネル: {task.channel_label}、テンプレ: {parsed.template}）{note}",
    )
    return f"scheduled at {schedule.due_at.isoformat()}"


def _act_reschedule(*, tenant, task, state, client, reason) -> str:
    verdict = tenant.quiet_hours_config().check(state.parsed.publish_at)
    publish_at = state.parsed.publish_at
    if verdict.inside:
        if tenant.quiet_hours_config().mode == "reject":
            schedule_delete(task=task)
            return _reject(client, task, f"{reason}。{verdict.message}")
        publish_at = verdict.window_end
    schedule = _schedule(task, state, publish_at, DeliverySchedule.Reason.RESCHEDULE, new_approval=False)
    _comment(
        client,
        task,
        f"[automedia] {reason}。配信予約を {fmt_jst(schedule.due_at)} に更新しました。",
    )
    return f"rescheduled at {schedule.due_at.isoformat()}"


def _act_invalidate(*, tenant, task, state, client, reason) -> str:
    # Backlog first: if the PATCH fails the schedule (and so the decision) survives for the retry.
    status_id = revert_status_id(client=client, project_key=tenant.backlog_project_key)
    comment = f"[automedia] {reason}。承認を取り消し、配信予約を削除しました。内容を確認して、もう一度「{STATUS_APPROVED}」にしてください。"
    client.update_issue(task.issue_key, status_id=status_id, comment=comment)
    schedule_delete(task=task)
    _mirror_status(task, status_id, client, tenant)
    return f"invalidated: {reason}"


def _act_already_delivered(*, tenant, task, state, client, reason) -> str:
    _comment(
        client,
        task,
        f"[automedia] この課題は {fmt_jst(state.delivered_at)} に配信済みのため、再配信しません。再配信するにはカスタム属性「{FIELD_DELIVERED_AT}」を空にしてから承認してください。",
    )
    return "already delivered"


def _task_approved_post(task: ContentTask) -> None:
    """linepush's task_approved post to the task's 連絡グループ (idempotent per approval)."""
    from linepush.producers import task_approved_enqueue

    task_approved_enqueue(task=task)


ACTIONS = {
    "none": _act_none,
    "unschedule": _act_unschedule,
    "register": _act_register,
    "reschedule": _act_reschedule,
    "invalidate": _act_invalidate,
    "already_delivered": _act_already_delivered,
}


def _schedule(task, state, publish_at, reason, *, new_approval: bool) -> DeliverySchedule:
    now = timezone.now()
    with transaction.atomic():
        schedule = schedule_upsert(task=task, due_at=max(publish_at, now + MIN_LEAD), reason=reason)
        fields = {"approved_publish_at": state.parsed.publish_at}
        if new_approval:
            fields |= {
                "approved_at": now,
                "approval_fingerprint": state.fingerprint,
                "approved_template_ref": str(state.parsed.template or ""),
                "approval_seq": F("approval_seq") + 1,
                "command_override": {},
            }
        ContentTask.objects.filter(pk=task.pk).update(**fields)
    return schedule


def _reject(client: BacklogClient, task: ContentTask, message: str) -> str:
    """Move an approval automedia cannot honour to automediaエラー, saying why."""
    tenant = task.tenant
    status_id = client.status_id(tenant.backlog_project_key, STATUS_ERROR)
    if status_id is None:
        raise BacklogConfigError(
            f"プロジェクト {tenant.backlog_project_key} に状態「{STATUS_ERROR}」がありません"
        )
    client.update_issue(task.issue_key, status_id=status_id, comment=f"[automedia] {message}")
    _mirror_status(task, status_id, client, tenant)
    return f"rejected: {message.splitlines()[0]}"


def _mirror_status(task: ContentTask, status_id: int, client: BacklogClient, tenant: Tenant) -> None:
    # Record automedia's own change at once, so the webhook it causes finds nothing to do.
    name = next((s["name"] for s in client.statuses(tenant.backlog_project_key) if s["id"] == status_id), "")
    ContentTask.objects.filter(pk=task.pk).update(status_id=status_id, status_name=name)


def _comment(client: BacklogClient, task: ContentTask, text: str) -> None:
    """Informational comment: a failure is logged, never undoes the decision."""
    try:
        client.add_comment(task.issue_key, text)
    except BacklogError as exc:
        logger.warning("comment on %s failed: %s", task.issue_key, exc)


def revert_status_id(*, client: BacklogClient, project_key: str) -> int:
    """Where invalidation sends an issue back (seed 001 precedence).

    NAME set → resolve it, ID is the fallback; only ID set → use it directly;
    neither → resolve 処理中.
    """
    name, fallback = settings.INVALIDATE_REVERT_STATUS_NAME, settings.INVALIDATE_REVERT_STATUS_ID
    if not name and fallback is not None:
        return fallback
    status_id = client.status_id(project_key, name or STATUS_DEFAULT_REVERT)
    if status_id is not None:
        return status_id
    if fallback is not None:
        return fallback
    raise BacklogConfigError(
        f"差し戻し先の状態「{name or STATUS_DEFAULT_REVERT}」がプロジェクト {project_key} にありません"
        "（INVALIDATE_REVERT_STATUS_NAME / INVALIDATE_REVERT_STATUS_ID で指定できます）"
    )


# -- catch-up (missed webhooks) ----------------------------------------------------


def catchup_run(*, tenant: Tenant, client: BacklogClient) -> int:
    """Store and process project activities after the tenant's cursor; returns how many were new."""
    cursor = tenant.last_activity_id
    if cursor is None:
        # First run: start from now; the daily scan covers anything older.
        latest = client.activities(tenant.backlog_project_key, min_id=None, latest=True)
        Tenant.objects.filter(pk=tenant.pk).update(last_activity_id=latest[0]["id"] if latest else 0)
        return 0
    new = 0
    while page := client.activities(tenant.backlog_project_key, min_id=cursor):
        for activity in page:
            event_id = activity_store(tenant=tenant, activity=activity, source="catchup")
            if event_id is not None and activity_handled(activity):
                new += 1
                event_process(event_id=event_id, client=client)
        cursor = max(a["id"] for a in page)
        Tenant.objects.filter(pk=tenant.pk).update(last_activity_id=cursor)
    return new


def pending_events_retry(*, older_than: timedelta = timedelta(minutes=1)) -> int:
    """Re-run accepted events whose task was lost by the broker or failed (bounded)."""
    cutoff = timezone.now() - older_than
    stale = BacklogEvent.objects.filter(
        outcome__in=[BacklogEvent.Outcome.PENDING, BacklogEvent.Outcome.FAILED],
        received_at__lt=cutoff,
        attempts__lt=MAX_EVENT_ATTEMPTS,
    ).order_by("activity_id")
    count = 0
    for event_id in stale.values_list("pk", flat=True):
        event_process(event_id=event_id)
        count += 1
    return count
