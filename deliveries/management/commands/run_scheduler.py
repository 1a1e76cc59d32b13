"""The delivery scheduler loop (`manage.py run_scheduler`).

django-q2's own Schedule runner looks only every ~30 s; deliveries must fire within
a second, so this loop sleeps until the earliest due row (never longer than a short
poll, so new rows are seen quickly), claims due rows under a lease and hands them,
a few per task, to django-q2 `deliver_batch` tasks. Several of these processes may run at once.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections
from django.utils import timezone
from django_q.tasks import async_task

from backlog_bridge.events import events_stranded_drain
from deliveries.scheduler import heartbeat, next_wakeup, schedules_claim
from deliveries.scheduler_steps import scheduler_steps_run

logger = logging.getLogger("automedia.scheduler")

DELIVERY_QUEUE = "deliveries"  # settings.Q_CLUSTER["ALT_CLUSTERS"]


class Command(BaseCommand):
    help = "配信スケジュールを秒精度で発火させます（SIGTERM で終了）。"

    def add_arguments(self, parser):
        parser.add_argument(
            "--poll", type=float, default=settings.SCHEDULER_POLL_SECONDS, help="longest sleep (s)"
        )
        parser.add_argument("--batch", type=int, default=50, help="rows claimed per pass")
        parser.add_argument(
            "--task-size",
            type=int,
            default=settings.DELIVERY_TASK_SIZE,
            help="claimed rows handed to one deliver_batch task",
        )

    def handle(self, *args, poll: float, batch: int, task_size: int, **opts):
        self.stopping = False
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.batch = batch
        self.task_size = max(1, task_size)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        logger.info("scheduler %s started (poll %.2fs)", self.name, poll)
        while not self.stopping:
            close_old_connections()
            try:
                if self.handle_one():
                    continue  # there may be more due rows right now
                self._sleep(next_wakeup(now=timezone.now(), poll=poll))
            except Exception:
                logger.exception("scheduler pass failed")
                self._sleep(poll)
        logger.info("scheduler %s stopped", self.name)

    def handle_one(self) -> bool:
        """One pass: claim due rows and enqueue them; True when something was claimed."""
        now = timezone.now()
        claimed = schedules_claim(now=now, limit=self.batch)
        for start in range(0, len(claimed), self.task_size):
            chunk = claimed[start : start + self.task_size]
            async_task("deliveries.tasks.deliver_batch", chunk, cluster=DELIVERY_QUEUE)
        stepped = scheduler_steps_run(now=now, limit=self.batch)  # e.g. linepush's group posts
        events_stranded_drain(now=now)  # webhook events no drain took (backlog_bridge)
        heartbeat(name=self.name, now=now)
        return bool(claimed) or stepped

    def _stop(self, *_):
        self.stopping = True

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
