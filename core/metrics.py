"""Prometheus metrics. Web, workers and schedulers are separate processes, so when
PROMETHEUS_MULTIPROC_DIR is set (make run, production) prometheus_client's
multiprocess mode aggregates them; schedule gauges are read from the database at
scrape time.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

DELIVERIES = Counter(
    "automedia_deliveries_total", "Deliveries ended, by outcome and channel", ["outcome", "channel"]
)
LATENESS = Histogram(
    "automedia_firing_lateness_seconds",
    "Time from a schedule's due_at to the start of its delivery",
    buckets=(0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0),
)
OUTBOUND = Counter(
    "automedia_outbound_calls_total", "Calls to outside services, by status code", ["service", "status"]
)

CLAIMED_AGAIN = Counter(
    "automedia_claims_expired_total",
    "Rows claimed again after an earlier claim's lease ran out: its worker died, or its task"
    " waited in the broker longer than the lease",
    ["queue"],
)
WEBHOOK_EVENTS = Counter(
    "automedia_webhook_events_received_total",
    "Webhook events received, by source and what the receiver did: accepted, duplicate, or"
    " rejected (stored with the reason, never acted on)",
    ["source", "result"],
)


def webhook_event_received(source: str, result: str) -> None:
    WEBHOOK_EVENTS.labels(source=source, result=result).inc()


APPROVALS_REFUSED = Counter(
    "automedia_approvals_refused_total",
    "Approvals refused before any request, by reason: the issue body (body), the quiet hours"
    " (quiet_hours) or the approval-time checks (checks)",
    ["reason"],
)


def approval_refused(reason: str) -> None:
    APPROVALS_REFUSED.labels(reason=reason).inc()


def claimed_again(queue: str, count: int) -> None:
    if count:
        CLAIMED_AGAIN.labels(queue=queue).inc(count)


def outbound_call(service: str, status: str) -> None:
    OUTBOUND.labels(service=service, status=status).inc()


def delivery_ended(outcome: str, channel: str) -> None:
    DELIVERIES.labels(outcome=outcome, channel=channel or "unknown").inc()


def fired(lateness_seconds: float) -> None:
    LATENESS.observe(max(0.0, lateness_seconds))
