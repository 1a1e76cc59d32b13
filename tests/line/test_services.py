"""Whom a LINE tag audience reaches: the tenant's followers whose tags match, blocked ones left out."""

from __future__ import annotations

import pytest

from backlog_bridge.audience import parse_audience
from line.services import contacts_matching
from tests.helpers.factories import LineContactFactory, TenantFactory


@pytest.mark.django_db
def test_it_reaches_the_followers_whose_tags_match_in_user_id_order():
    tenant = TenantFactory()
    later = LineContactFactory(tenant=tenant, user_id="U2", tags=["vip", "tokyo"])
    first = LineContactFactory(tenant=tenant, user_id="U1", tags=["vip"])
    LineContactFactory(tenant=tenant, user_id="U3", tags=["vip"], blocked=True)
    LineContactFactory(tenant=tenant, user_id="U4", tags=["osaka"])
    LineContactFactory(user_id="U5", tags=["vip"])  # another tenant's

    found = contacts_matching(tenant=tenant, audience=parse_audience("tag:vip"))

    assert found == [first.user_id, later.user_id]
