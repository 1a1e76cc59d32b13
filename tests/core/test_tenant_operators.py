"""Who may run comment commands: Backlog users by numeric id or userId, never by display name."""

from __future__ import annotations

import pytest

from core.models import Tenant

YAMADA = {"id": 1001, "userId": "manager", "name": "山田 マネージャー"}


@pytest.mark.parametrize("operators", [["1001"], ["manager"], ["someone", "1001", "manager"]])
def test_it_matches_an_operator_by_numeric_id_or_user_id(operators):
    assert Tenant(operators=operators).is_operator(YAMADA)


def test_it_never_matches_a_display_name():
    # Any member of the space can call themselves 山田 マネージャー.
    impostor = {"id": 2002, "userId": "guest", "name": "山田 マネージャー"}

    assert not Tenant(operators=["山田 マネージャー"]).is_operator(impostor)
    assert not Tenant(operators=["山田 マネージャー"]).is_operator(YAMADA)


@pytest.mark.parametrize("user", [None, {}, {"id": None, "userId": None, "name": "manager"}])
def test_it_matches_no_one_without_an_id(user):
    assert not Tenant(operators=["manager", "None", ""]).is_operator(user)
