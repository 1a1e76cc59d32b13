"""Workflows over the LINE account's rows: a tenant's LINE settings, whom a tag audience reaches."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from backlog_bridge.audience import Audience
from core.models import Tenant
from line.models import LineContact, LinePushSettings


def push_settings(*, tenant: Tenant) -> LinePushSettings:
    """The tenant's LINE settings, made with the defaults when it has none."""
    found = LinePushSettings.objects.select_related("plan").filter(tenant=tenant).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return LinePushSettings.objects.create(tenant=tenant)
    except IntegrityError:
        return LinePushSettings.objects.select_related("plan").get(tenant=tenant)


def contacts_matching(*, tenant: Tenant, audience: Audience) -> list[str]:
    """The user ids of the tenant's followers (not blocked) the tag audience reaches, sorted."""
    contacts = LineContact.objects.filter(tenant=tenant, blocked=False).order_by("user_id")
    return [c.user_id for c in contacts.only("user_id", "tags") if audience.matches(set(c.tags))]
