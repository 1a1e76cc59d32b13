"""The scheduler loop (`manage.py run_scheduler`): due work fires within a second.

django-q2's own Schedule runner looks only every ~30 s. This loop sleeps until the earliest
due row (at most SCHEDULER_POLL_SECONDS) and runs the steps settings.SCHEDULER_STEPS lists
(deliveries/scheduler_steps.py): each claims its queue's due rows under a lease and hands
them to django-q2 workers. Several of these processes may run at once.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from core.keeper import ConnectionCheck
from deliveries.publish.scheduler import heartbeat, next_wakeup
from deliveries.scheduler_steps import Pass, scheduler_steps, scheduler_steps_run

logger = logging.getLogger("automedia.scheduler")
HEARTBEAT_EVERY = timedelta(seconds=1)  # the health check allows HEALTH_HEARTBEAT_MAX_AGE (30 s)


class Command(BaseCommand):
    help = "配信スケジュールを秒精度で発火させます（SIGTERM で終了）。"

    def add_arguments(self, parser):
        parser.add_argument(
            "--poll", type=float, default=settings.SCHEDULER_POLL_SECONDS, help="longest sleep (s)"
        )
        parser.add_argument(
            "--batch", type=int, default=settings.SCHEDULER_BATCH, help="rows claimed per pass and queue"
        )

    def handle(self, *args, poll: float, batch: int, **opts):
        self.stopping = False
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.batch = batch
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        # A path that does not import stops the start here, not every pass in the loop below.
        steps = scheduler_steps()
        logger.info("scheduler %s started (poll %.2fs, %d steps)", self.name, poll, len(steps))
        check = ConnectionCheck()  # not on every pass: a burst runs many passes a second
        while not self.stopping:
            check()
            try:
                found = self.handle_one()
                if found is Pass.WORKED:
                    continue  # there may be more due rows right now
                wait = next_wakeup(now=timezone.now(), poll=poll)
                if found is Pass.HELD:  # room frees as workers start their tasks, not on a clock
                    wait = min(wait, settings.SCHEDULER_HELD_POLL_SECONDS)
                self._sleep(wait)
            except Exception:
                logger.exception("scheduler pass failed")
                self._sleep(poll)
        logger.info("scheduler %s stopped", self.name)

    last_beat = None  # when this loop last wrote its heartbeat

    def handle_one(self) -> Pass:
        """One pass: every configured step (deliveries/scheduler_steps.py Pass). The
        heartbeat is written at most once per HEARTBEAT_EVERY: a burst runs many passes
        a second, and each write is a commit."""
        now = timezone.now()
        stepped = scheduler_steps_run(now=now, limit=self.batch)
        if self.last_beat is None or now - self.last_beat >= HEARTBEAT_EVERY:
            heartbeat(name=self.name, now=now)
            self.last_beat = now
        return stepped

    def _stop(self, *_):
        self.stopping = True

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < end:
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
