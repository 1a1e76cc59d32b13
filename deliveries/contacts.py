"""Who a LINE audience (tag expression) reaches. The contacts are linepush's (followers
seen by its LINE webhook); it registers the lookup in its AppConfig.ready, so the
delivery imports nothing of linepush."""

from __future__ import annotations

from typing import Protocol

from backlog_bridge.audience import Audience
from core.models import Tenant


class ContactsLookup(Protocol):
    def __call__(self, *, tenant: Tenant, audience: Audience) -> list[str]:
        """The user ids of the tenant's reachable contacts the audience matches, sorted."""


_lookups: list[ContactsLookup] = []


def line_contacts_register(lookup: ContactsLookup) -> None:
    _lookups[:] = [lookup]  # one source of contacts; ready() may run more than once


def line_users_matching(*, tenant: Tenant, audience: Audience) -> list[str]:
    """No lookup registered (linepush not installed): nobody is reachable by tag."""
    return _lookups[0](tenant=tenant, audience=audience) if _lookups else []
