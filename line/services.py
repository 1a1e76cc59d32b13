"""Workflows over the LINE account's rows: whom a tag audience reaches."""

from __future__ import annotations

from backlog_bridge.audience import Audience
from core.models import Tenant
from line.models import LineContact


def contacts_matching(*, tenant: Tenant, audience: Audience) -> list[str]:
    """The user ids of the tenant's followers (not blocked) the tag audience reaches, sorted."""
    contacts = LineContact.objects.filter(tenant=tenant, blocked=False).order_by("user_id")
    return [c.user_id for c in contacts.only("user_id", "tags") if audience.matches(set(c.tags))]
