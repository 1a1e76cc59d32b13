"""Growth benchmark: due work and admin lists over big record tables, and a prune beside deliveries.

`make bench-retention` (or `.venv/bin/python bench/retention.py --help`). On a throwaway
database (SQLite in a temp dir, or the PostgreSQL database given by `--database-url`,
dropped and created) it stores `--events` webhook events (half Backlog, half LINE) and
`--attempts` delivery attempts, `--old` of each older than the retention periods, then:

1. Due work, per call: one `run_scheduler` pass with every registered step (schedules,
   group posts, stranded Backlog and LINE events; nothing due, as most passes), and the
   event retry jobs (`pending_events_retry`, `line_events_retry`; a few failed events,
   recent and held by a live worker, so they find none to retry: their queries over the
   tables are what is measured). p50 / p99 over `--requests` calls.
2. Admin lists, per request (a superuser, Django's test client in this process): the
   task list, LINE events, Backlog events. p50 / p99 over `--requests` requests.
3. The prune: `manage.py prune_records` as its own process, while another process writes
   a steady `--rate` deliveries a second (each one transaction: a LINE attempt, the task's
   自動配信実行日時, its outcome: the rows a LINE send commits). The prune's wall time and
   rows, and the deliveries' commit latency p50 / p99 / max while it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import calibration  # noqa: E402
from bench.webhook import base_env, manage, postgres  # noqa: E402

STREAM_P99_TARGET_S = 0.3
TASKS = 2_000
HELD_FAILED = 50  # failed events per kind, recent and held by a live worker: the jobs act on none


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="stored webhook events (both kinds)")
    parser.add_argument("--attempts", type=int, default=1_000_000, help="stored delivery attempts")
    parser.add_argument("--old", type=float, default=0.5, help="share of each past its retention period")
    parser.add_argument("--requests", type=int, default=100, help="calls per measured query or page")
    parser.add_argument("--rate", type=float, default=10.0, help="deliveries a second during the prune")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument("--json", action="store_true", help="print the results as one JSON object")
    parser.add_argument("--stream", metavar="STOP_FILE", help=argparse.SUPPRESS)  # the delivery process
    return parser.parse_args()


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 4) if ordered else 0.0


def timed(fn, n: int) -> dict[str, float]:
    fn()  # warm: connections, caches, the first query plans
    took = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        took.append(time.perf_counter() - started)
    return {"p50_s": pct(took, 0.5), "p99_s": pct(took, 0.99), "max_s": round(max(took), 4)}


# -- seeding (in this process, after django.setup) ---------------------------------------------


def seed(events: int, attempts: int, old: float) -> None:
    from datetime import timedelta

    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from backlog_bridge.models import BacklogEvent
    from core.models import Tenant
    from deliveries.models import ContentTask, DeliveryAttempt, DeliverySchedule
    from line.models import LineWebhookEvent

    now = timezone.now()
    tenant = Tenant.objects.create(slug="bench", name="bench", backlog_project_key="BENCH")
    get_user_model().objects.create_superuser("bench", "bench@example.jp", "bench")
    tasks = ContentTask.objects.bulk_create(
        ContentTask(tenant=tenant, issue_key=f"BENCH-{n + 1}", summary=f"課題 {n}") for n in range(TASKS)
    )
    DeliverySchedule.objects.bulk_create(  # open deliveries, none due
        DeliverySchedule(tenant=tenant, task=t, name=f"s{t.pk}", due_at=now + timedelta(days=1))
        for t in tasks[:200]
    )
    past = now - timedelta(days=max(settings.RETENTION_EVENTS_DAYS, settings.RETENTION_AUDIT_DAYS) + 1)
    half = events // 2
    _bulk(
        BacklogEvent,
        (
            BacklogEvent(
                tenant=tenant,
                activity_id=n + 1,
                type=2,
                issue_key=f"BENCH-{n % TASKS + 1}",
                payload={"id": n + 1, "type": 2, "content": {"key_id": n % TASKS + 1}},
                outcome="done",
            )
            for n in range(half)
        ),
    )
    line_payload = {"type": "message", "source": {"type": "group", "groupId": "C" + "0" * 32}}
    _bulk(
        LineWebhookEvent,
        (
            LineWebhookEvent(
                tenant=tenant,
                webhook_event_id=f"e{n}",
                type="message",
                outcome="done",
                payload={**line_payload, "message": {"id": str(n), "type": "text", "blanked": True}},
            )
            for n in range(events - half)
        ),
    )
    _bulk(
        DeliveryAttempt,
        (
            DeliveryAttempt(
                tenant=tenant,
                task=tasks[n % TASKS],
                approval_seq=1,
                channel="line",
                endpoint="/v2/bot/message/push",
                outcome="sent",
                status_code=200,
                duration_ms=40,
                request_summary={"kind": "push", "recipients": 1},
            )
            for n in range(attempts)
        ),
    )
    for model, count, field in (
        (BacklogEvent, int(half * old), "received_at"),
        (LineWebhookEvent, int((events - half) * old), "received_at"),
        (DeliveryAttempt, int(attempts * old), "created_at"),
    ):
        last = model.objects.order_by("pk").values_list("pk", flat=True)[count - 1] if count else 0
        model.objects.filter(pk__lte=last).update(**{field: past})
    held = {"outcome": "failed", "attempts": 1, "claimed_until": now + timedelta(days=1)}
    BacklogEvent.objects.filter(
        pk__in=BacklogEvent.objects.order_by("-pk").values("pk")[:HELD_FAILED]
    ).update(**held)
    LineWebhookEvent.objects.filter(
        pk__in=LineWebhookEvent.objects.order_by("-pk").values("pk")[:HELD_FAILED]
    ).update(**held)
    _analyze()


def _bulk(model, rows, size: int = 5_000) -> None:
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            model.objects.bulk_create(batch)
            batch = []
    if batch:
        model.objects.bulk_create(batch)


def _analyze() -> None:
    """The planner's statistics, as tables filled over months have them."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


# -- measuring -----------------------------------------------------------------------------------


def due_work(n: int) -> dict[str, dict]:
    from django.utils import timezone

    from backlog_bridge.events import BACKLOG_EVENTS
    from backlog_bridge.services import pending_events_retry
    from deliveries.scheduler_steps import scheduler_steps_run
    from line.events import LINE_EVENTS, line_events_retry

    def scheduler_pass():
        # Every pass checks the stranded events (their own 2 s throttle skips most passes).
        BACKLOG_EVENTS.stranded_checked_at = float("-inf")
        LINE_EVENTS.stranded_checked_at = float("-inf")
        scheduler_steps_run(now=timezone.now(), limit=200)

    def retry_jobs():
        pending_events_retry()
        line_events_retry()

    return {"scheduler pass": timed(scheduler_pass, n), "event retry jobs": timed(retry_jobs, n)}


PAGES = {
    "task list": "/admin/deliveries/contenttask/",
    "LINE events": "/admin/line/linewebhookevent/",
    "Backlog events": "/admin/backlog_bridge/backlogevent/",
}


def admin_pages(n: int) -> dict[str, dict]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    results = {}
    for name, url in PAGES.items():

        def get(url=url):
            response = client.get(url)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")

        results[name] = timed(get, n)
    return results


def prune_beside_deliveries(env: dict[str, str], rate: float, tmp: Path) -> dict:
    stop = tmp / "stop"
    out = tmp / "stream.json"
    stream = subprocess.Popen(
        [sys.executable, __file__, "--rate", str(rate), "--stream", str(stop)],
        cwd=ROOT,
        env=env,
        stdout=out.open("w"),
    )
    time.sleep(3)  # the stream settles
    started = time.time()
    printed = manage(env, "prune_records")
    ended = time.time()
    time.sleep(1)
    stop.touch()
    if stream.wait(60) != 0:
        raise SystemExit("the delivery stream failed")
    commits = json.loads(out.read_text())
    during = [took for at, took in commits if started <= at <= ended]
    rows = {}
    for line in printed.splitlines():
        head, _, count = line.rpartition(": ")
        rows[" ".join(head.split())] = int(count)
    return {
        "prune_wall_s": round(ended - started, 1),
        "rows": rows,
        "deliveries_during_prune": len(during),
        "delivery_commit_p50_s": pct(during, 0.5),
        "delivery_commit_p99_s": pct(during, 0.99),
        "delivery_commit_max_s": round(max(during), 4) if during else 0.0,
        "delivery_p99_ok": pct(during, 0.99) <= STREAM_P99_TARGET_S,
    }


def stream(rate: float, stop: Path) -> None:
    """The delivery process: `rate` transactions a second until `stop` exists; prints
    [[start time, seconds to commit]] as JSON."""
    import django

    django.setup()
    from django.db import transaction
    from django.utils import timezone

    from console.models import DeliveryOutcome
    from deliveries.models import ContentTask, DeliveryAttempt

    tasks = list(ContentTask.objects.order_by("pk").values_list("pk", "tenant_id")[:TASKS])
    commits, n, period = [], 0, 1.0 / rate
    next_at = time.monotonic()
    while not stop.exists():
        task_id, tenant_id = tasks[n % len(tasks)]
        at, started = time.time(), time.perf_counter()
        with transaction.atomic():
            DeliveryAttempt.objects.create(
                tenant_id=tenant_id,
                task_id=task_id,
                approval_seq=1,
                channel="line",
                endpoint="/v2/bot/message/push",
                outcome="sent",
                status_code=200,
                request_summary={"kind": "push", "recipients": 1},
            )
            ContentTask.objects.filter(pk=task_id).update(delivered_at=timezone.now())
            DeliveryOutcome.objects.create(
                tenant_id=tenant_id, task_id=task_id, kind="sent", detail="delivered"
            )
        commits.append((at, time.perf_counter() - started))
        n += 1
        next_at += period
        time.sleep(max(0.0, next_at - time.monotonic()))
    print(json.dumps(commits))


# -- the run --------------------------------------------------------------------------------------


def run(args: argparse.Namespace, tmp: Path) -> dict:
    url = args.database_url or f"sqlite:///{tmp / 'bench.sqlite3'}"
    if url.startswith("postgres"):
        postgres(url, create=True)
    env = {**base_env(url), "ALLOWED_HOSTS": "testserver,localhost"}
    manage(env, "migrate", "--noinput")
    os.environ.update(env)
    import django

    django.setup()
    started = time.perf_counter()
    seed(args.events, args.attempts, args.old)
    result = {
        "database": "postgresql" if url.startswith("postgres") else "sqlite",
        "events": args.events,
        "attempts": args.attempts,
        "old_share": args.old,
        "seed_s": round(time.perf_counter() - started, 1),
        "calibration_s": calibration(),
        "load_average": os.getloadavg(),
        "due_work": due_work(args.requests),
        "admin_pages": admin_pages(args.requests),
    }
    from django.db import connection

    connection.close()
    result["prune"] = prune_beside_deliveries(env, args.rate, tmp)
    if url.startswith("postgres"):
        postgres(url, create=False)
    return result


def print_table(result: dict) -> None:
    print(
        f"{result['database']}: {result['events']:,} events, {result['attempts']:,} attempts "
        f"({result['old_share']:.0%} past retention); calibration {result['calibration_s']} s, "
        f"load {result['load_average'][0]:.2f}"
    )
    for group in ("due_work", "admin_pages"):
        for name, r in result[group].items():
            print(f"  {name:<18} p50 {r['p50_s'] * 1000:7.1f} ms  p99 {r['p99_s'] * 1000:7.1f} ms")
    p = result["prune"]
    print(f"  prune: {p['prune_wall_s']} s; " + ", ".join(f"{k} {v:,}" for k, v in p["rows"].items() if v))
    print(
        f"  deliveries during it: {p['deliveries_during_prune']}, commit p50 "
        f"{p['delivery_commit_p50_s'] * 1000:.1f} ms, p99 {p['delivery_commit_p99_s'] * 1000:.1f} ms, "
        f"max {p['delivery_commit_max_s'] * 1000:.1f} ms ({'ok' if p['delivery_p99_ok'] else 'OVER'} "
        f"<= {STREAM_P99_TARGET_S} s)"
    )


def main() -> int:
    args = parse_args()
    if args.stream:
        stream(args.rate, Path(args.stream))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-retention-") as tmp:
        result = run(args, Path(tmp))
    print(json.dumps(result, ensure_ascii=False)) if args.json else print_table(result)
    return 0 if result["prune"]["delivery_p99_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
