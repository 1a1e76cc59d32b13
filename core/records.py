"""Abstract bases of the record models several apps keep alike.

- `StoredWebhookEvent`: a provider's webhook event stored raw and deduplicated before
  anything acts on it (`backlog_bridge.BacklogEvent`, `line.LineWebhookEvent`); a
  worker takes it under a claim and records the outcome (core/intake.py, one for both).
- `OutboundAttempt`: one outbound request, the audit log and the admin's history
  (`deliveries.DeliveryAttempt`, `linepush.LinePushAttempt`).

Each concrete model keeps its own table and column names.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib import admin
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core.due import Lease
from core.redact import secrets_redact

DETAIL_MAX = 2000  # an outcome's detail is a summary, not a dump
REASON_SHOWN = 200  # of a rejected event's detail, in the admin's list


def event_lease() -> timedelta:
    """How long a worker holds an event it is processing, renewed by its keeper meanwhile."""
    return timedelta(seconds=settings.EVENT_LEASE_SECONDS)


class StoredWebhookEvent(models.Model):
    class Outcome(models.TextChoices):
        PENDING = "pending", _("処理待ち")
        DONE = "done", _("処理済み")
        IGNORED = "ignored", _("対象外")
        FAILED = "failed", _("失敗")
        # A handler cannot use it (a malformed payload, or still failing after the last
        # attempt): an end, with the reason in `detail`, never retried.
        REJECTED = "rejected", _("受付不可")

    # Ends: processing it again would act twice (done) or cannot help (ignored, rejected).
    SETTLED = (Outcome.DONE, Outcome.IGNORED, Outcome.REJECTED)

    payload = models.JSONField(_("受信内容"))
    outcome = models.CharField(_("結果"), max_length=16, choices=Outcome.choices, default=Outcome.PENDING)
    detail = models.TextField(_("詳細"), blank=True)
    attempts = models.PositiveSmallIntegerField(_("処理回数"), default=0)
    received_at = models.DateTimeField(_("受信日時"), auto_now_add=True)
    processed_at = models.DateTimeField(_("処理日時"), null=True, blank=True)
    # A worker holds the event while it processes it; a dead worker's hold expires. A
    # failed event's is the time of its next try (core/intake.py).
    claimed_until = models.DateTimeField(_("処理中の期限"), null=True, blank=True)
    CLAIM = Lease(length=event_lease, until="claimed_until", owner=None)  # no token: the hold alone

    class Meta:
        abstract = True

    @classmethod
    def finished(cls, *, outcome: str, detail: str) -> dict:
        """The UPDATE that ends processing: the outcome, a bounded detail, the hold freed."""
        return {
            "outcome": outcome,
            "detail": secrets_redact(detail)[:DETAIL_MAX],  # an error's text may hold a request URL
            "processed_at": timezone.now(),
            **cls.CLAIM.freed(),
        }

    def is_settled(self) -> bool:
        return self.outcome in self.SETTLED

    @admin.display(description=_("受付不可の理由"))
    def rejected_reason(self) -> str:
        """Why a handler could not use it: the admin lists it next to the outcome."""
        return self.detail[:REASON_SHOWN] if self.outcome == self.Outcome.REJECTED else ""


class OutboundAttempt(models.Model):
    class Outcome(models.TextChoices):
        SENT = "sent", _("送信済み")
        DUPLICATE = "duplicate", _("送信済み（再送検知 409）")
        RETRY = "retry", _("再試行")
        FAILED = "failed", _("失敗")

    # The provider took the request (now, or on an earlier try with the same retry key).
    ACCEPTED = (Outcome.SENT, Outcome.DUPLICATE)

    status_code = models.PositiveIntegerField(_("HTTP ステータス"), null=True, blank=True)
    request_id = models.CharField(_("LINE リクエストID"), max_length=100, blank=True)
    outcome = models.CharField(_("結果"), max_length=16, choices=Outcome.choices)
    error = models.TextField(_("エラー"), blank=True)
    duration_ms = models.PositiveIntegerField(_("所要時間（ミリ秒）"), default=0)
    created_at = models.DateTimeField(_("日時"), auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]
