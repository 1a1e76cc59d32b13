"""The broker: the ORM (the database) by default, Redis when REDIS_URL is set — checked
against the real Redis this machine runs (CI checks it is reachable)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from django.conf import settings

from automedia_site.workers import delivery_workers, host_cores

REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
ROUND_TRIP = """
import django, os
django.setup()
from django_q.brokers import get_broker
broker = get_broker()
print(type(broker).__name__)
assert broker.ping(), "redis ping failed"
broker.enqueue(os.environ["PAYLOAD"])
task_id, payload = broker.dequeue()[0]
broker.acknowledge(task_id)
print(payload.decode() if isinstance(payload, bytes) else payload)
"""


def run_with(**env) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    env = {**base, "DJANGO_SETTINGS_MODULE": "automedia_site.test_settings", **env}
    return subprocess.run(
        [sys.executable, "-c", ROUND_TRIP],
        env=env,
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        timeout=60,
    )


def test_it_queues_through_redis_when_redis_url_is_set():
    payload = uuid.uuid4().hex
    result = run_with(REDIS_URL=REDIS_URL, PAYLOAD=payload, Q_SYNC="0")

    assert result.returncode == 0, f"Redis at {REDIS_URL} unreachable or broken:\n{result.stderr[-2000:]}"
    assert result.stdout.split() == ["ClaimingRedis", payload]


def test_it_uses_the_database_broker_without_redis_url(tmp_path):
    payload = uuid.uuid4().hex
    db = f"sqlite:///{tmp_path / 'broker.sqlite3'}"
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        env={**os.environ, "DATABASE_URL": db, "DJANGO_SETTINGS_MODULE": "automedia_site.test_settings"},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrate.returncode == 0, migrate.stderr[-2000:]

    result = run_with(DATABASE_URL=db, PAYLOAD=payload, Q_SYNC="0")

    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["BulkORM", payload]


SAVE_LIMIT = """
import django
django.setup()
from django_q.conf import Conf
print(Conf.SAVE_LIMIT, Conf.WORKERS, Conf.BULK)
"""


def cluster_conf(**env) -> list[str]:
    """A qcluster's SAVE_LIMIT, WORKERS and BULK as django-q2 reads them from `env` (the
    queue and worker settings under test removed from this process's own environment)."""
    unset = ("Q_CLUSTER_NAME", "DELIVERY_WORKERS", "DATABASE_PROCESSES")
    base = {k: v for k, v in os.environ.items() if k not in unset}
    env = {**base, "DJANGO_SETTINGS_MODULE": "automedia_site.test_settings", **env}
    done = subprocess.run(
        [sys.executable, "-c", SAVE_LIMIT], env=env, capture_output=True, text=True, cwd=settings.BASE_DIR
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_the_deliveries_queue_keeps_no_success_rows_and_takes_its_tasks_several_at_once():
    """Each push and delivery records its own outcome; the deliveries cluster's monitor
    skips django_q's Success row, which cost a read of up to 250 pickled rows per task. Its
    pusher takes DELIVERY_BULK tasks from the ORM broker at once (core/orm_broker.py)."""
    assert cluster_conf(Q_CLUSTER_NAME="deliveries", DELIVERY_WORKERS="3", DELIVERY_BULK="6") == [
        "-1",
        "3",
        "6",
    ]
    assert cluster_conf(Q_CLUSTER_NAME="deliveries")[2] == "4"  # its pusher takes 4 tasks at once
    assert cluster_conf()[0] == "250"
    assert cluster_conf()[2] == "1"  # the default queue's, one at a time


def test_without_delivery_workers_the_deliverers_share_the_hosts_cores():
    def workers(**env) -> int:
        return int(cluster_conf(Q_CLUSTER_NAME="deliveries", **env)[1])

    cores = host_cores()
    assert workers() == delivery_workers(deliverers=1, cores=cores)
    assert workers(DATABASE_PROCESSES="web=1,deliverer=4") == delivery_workers(deliverers=4, cores=cores)
    assert workers(DATABASE_PROCESSES="web=1,deliverer=4", DELIVERY_WORKERS="5") == 5


def test_the_orm_brokers_poll_is_q_poll_seconds():
    base = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "Q_POLL_SECONDS")}
    env = {**base, "DJANGO_SETTINGS_MODULE": "automedia_site.test_settings"}
    show = "import django; django.setup(); from django_q.conf import Conf; print(Conf.POLL)"

    def poll(**extra) -> str:
        result = subprocess.run(
            [sys.executable, "-c", show],
            env={**env, **extra},
            capture_output=True,
            text=True,
            cwd=settings.BASE_DIR,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout.split()[-1]

    assert poll() == "0.2"
    assert poll(Q_POLL_SECONDS="0.05") == "0.05"
