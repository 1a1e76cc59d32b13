"""The delivery scheduler loop (`manage.py run_scheduler`).

Issue 2 scope: the process exists, answers SIGTERM and reports what is waiting.
Claiming due rows and handing them to the `deliver` task is the delivery issue's.
"""

from __future__ import annotations

import logging
import signal
import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from deliveries.models import DeliverySchedule

logger = logging.getLogger("automedia.scheduler")


class Command(BaseCommand):
    help = "配信スケジュールを監視します（Ctrl-C / SIGTERM で終了）。"

    def add_arguments(self, parser):
        parser.add_argument("--poll", type=float, default=5.0, help="seconds between passes")

    def handle(self, *args, poll: float, **opts):
        self.stopping = False
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        logger.info("scheduler started")
        while not self.stopping:
            close_old_connections()
            waiting = DeliverySchedule.objects.count()
            logger.info("scheduler idle: %d schedule(s) waiting; delivery is not enabled yet", waiting)
            self._sleep(poll)
        logger.info("scheduler stopped")

    def _stop(self, *_):
        self.stopping = True

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self.stopping and time.monotonic() < end:
            time.sleep(min(0.2, end - time.monotonic()))
