"""Who may run comment commands: Backlog users by numeric id (`id:…`) or userId (`user:…`),
never by display name, and each entry says which it is."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from core.models import Tenant, validate_operators

YAMADA = {"id": 1001, "userId": "manager", "name": "山田 マネージャー"}


@pytest.mark.parametrize(
    "operators", [["id:1001"], ["user:manager"], ["user:someone", "id:1001", "user:manager"]]
)
def test_it_matches_an_operator_by_numeric_id_or_user_id(operators):
    assert Tenant(operators=operators).is_operator(YAMADA)


def test_it_never_matches_a_display_name():
    # Any member of the space can call themselves 山田 マネージャー.
    impostor = {"id": 2002, "userId": "guest", "name": "山田 マネージャー"}

    assert not Tenant(operators=["山田 マネージャー"]).is_operator(impostor)
    assert not Tenant(operators=["山田 マネージャー"]).is_operator(YAMADA)


@pytest.mark.parametrize("user", [None, {}, {"id": None, "userId": None, "name": "manager"}])
def test_it_matches_no_one_without_an_id(user):
    assert not Tenant(operators=["user:manager", "user:None", "id:None", "id:", "user:"]).is_operator(user)


def test_an_id_entry_never_matches_a_login_id_of_the_same_digits():
    # A space member whose userId is "1001" is not user 1001.
    namesake = {"id": 2002, "userId": "1001", "name": "誰か"}

    assert not Tenant(operators=["id:1001"]).is_operator(namesake)
    assert Tenant(operators=["user:1001"]).is_operator(namesake)
    assert not Tenant(operators=["user:1001"]).is_operator(YAMADA)


@pytest.mark.parametrize("entry", ["1001", "manager", "name:manager", "id:abc", "id:", "user:", "user:a b"])
def test_it_refuses_an_entry_that_does_not_say_what_it_is(entry):
    with pytest.raises(ValidationError, match="id:1001（数値のユーザーID）または user:yamada（userId）"):
        validate_operators(["id:1", entry])
