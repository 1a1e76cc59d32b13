"""Notices of new 要対応 rows to a tenant's managers, by mail or on LINE, once per row.

A recurring job (`console.tasks.attention_notices`, every minute) records each tenant's
rows of the last `NEW_WITHIN` that it has not recorded yet (`AttentionNotice`, unique per
tenant and row key), claims the unsent ones under a lease, and sends them as one message:
a burst of failures within the minute is one message. A row is recorded once, so it is
sent at most once; a send that fails gives its claim back and the next run tries again.
With notices off, new rows are recorded as not sent, so turning them on later does not
send the old ones.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.utils.translation import gettext as _

from console.attention import attention_rows
from console.models import AttentionNotice, NoticeSettings
from core.due import Lease
from core.models import Tenant, TenantMembership
from core.transport import TransportError
from line.direct import direct_push

logger = logging.getLogger(__name__)

NEW_WITHIN = timedelta(days=1)  # older rows are not news (and a first run sends no backlog)
LEASE = timedelta(minutes=5)
NOTICE_CLAIM = Lease(length=LEASE, until="claimed_until", owner="claim")  # core/due.py
SHOWN = 20  # rows listed in one message; the rest are counted
OFF = "通知しない設定"


def notices_run(*, now: datetime) -> int:
    """Every tenant's new rows; the number of rows sent."""
    return sum(notices_send(tenant=tenant, now=now) for tenant in Tenant.objects.order_by("pk"))


def notices_send(*, tenant: Tenant, now: datetime) -> int:
    choice = NoticeSettings.objects.filter(tenant=tenant).first() or NoticeSettings(tenant=tenant)
    _record_new(tenant, now)
    if not choice.enabled:
        AttentionNotice.objects.filter(tenant=tenant, sent_at__isnull=True).update(sent_at=now, sent_to=OFF)
        return 0
    token = str(uuid.uuid4())
    rows = _claim(tenant, now, token)
    if not rows:
        return 0
    try:
        sent_to = _deliver(choice, tenant, _message(tenant, rows))
    except (TransportError, OSError) as exc:
        logger.warning("attention notice for %s not sent: %s", tenant.slug, exc)
        AttentionNotice.objects.filter(claim=token).update(**NOTICE_CLAIM.freed())
        return 0
    if not sent_to:  # nobody to send to: the rows wait for a destination
        return 0
    AttentionNotice.objects.filter(claim=token).update(sent_at=now, sent_to=sent_to[:200])
    return len(rows)


def _record_new(tenant: Tenant, now: datetime) -> None:
    rows = [row for row in attention_rows(tenant=tenant, now=now) if row.at >= now - NEW_WITHIN]
    notices = [
        AttentionNotice(
            tenant=tenant,
            key=row.key,
            text=f"{row.label} {row.title} {row.summary}: {row.reason}"[:300],
            url=f"{settings.PUBLIC_BASE_URL.rstrip('/')}{row.url}"[:300],
        )
        for row in rows
    ]
    AttentionNotice.objects.bulk_create(notices, ignore_conflicts=True)


def _claim(tenant: Tenant, now: datetime, token: str) -> list[AttentionNotice]:
    unsent = AttentionNotice.objects.filter(NOTICE_CLAIM.free(now), tenant=tenant, sent_at__isnull=True)
    unsent.update(**NOTICE_CLAIM.taken(now=now, owner=token))
    return list(AttentionNotice.objects.filter(claim=token).order_by("created_at", "pk"))


def _message(tenant: Tenant, rows: list[AttentionNotice]) -> str:
    lines = [
        _("【automedia】%(tenant)s: 要対応が %(count)d 件あります")
        % {"tenant": tenant.name, "count": len(rows)}
    ]
    for row in rows[:SHOWN]:
        lines += ["", f"・{row.text}", row.url]
    if len(rows) > SHOWN:
        lines += ["", _("ほか %(count)d 件") % {"count": len(rows) - SHOWN}]
    base = settings.PUBLIC_BASE_URL.rstrip("/")
    lines += ["", _("ダッシュボード: %(url)s") % {"url": f"{base}/admin/#attention"}]
    lines += [_("通知の設定（止める・送り先）: 管理画面の「設定 › 要対応の通知」")]
    return "\n".join(lines)


def _deliver(choice: NoticeSettings, tenant: Tenant, text: str) -> str:
    """Sends the message; where it went, or "" when there is nobody to send it to."""
    if choice.via == NoticeSettings.Via.LINE:
        if not choice.line_to:
            return ""
        direct_push(tenant=tenant, to=choice.line_to, messages=[{"type": "text", "text": text[:5000]}])
        return f"LINE {choice.line_to}"
    emails = _manager_emails(tenant)
    if emails:
        subject = _("[automedia] 要対応（%(tenant)s）") % {"tenant": tenant.name}
        send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, emails)
    return ", ".join(emails)


def _manager_emails(tenant: Tenant) -> list[str]:
    members = TenantMembership.objects.filter(
        tenant=tenant, role=TenantMembership.Role.MANAGER, user__is_active=True
    ).exclude(user__email="")
    return sorted(set(members.values_list("user__email", flat=True)))
