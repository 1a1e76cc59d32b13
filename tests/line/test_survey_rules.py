"""Survey-answer rules (LINE アンケート回答ルール): managers' regex patterns run with RE2 on LINE text."""

from __future__ import annotations

import logging

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from core.models import TenantMembership
from line.models import LineContact, LineSurveyRule, LineWebhookEvent
from tests.helpers.console import member
from tests.helpers.linepush import USER, deliver, fixture, shop

pytestmark = pytest.mark.django_db


@pytest.fixture
def tenant(db):
    return shop()


@pytest.fixture
def as_manager(client, tenant):
    client.force_login(member("yamada", tenant, TenantMembership.Role.MANAGER))
    return client


def regex_rule(tenant, pattern: str, **fields) -> LineSurveyRule:
    fields = {"name": "日付", "add_tags": ["date_given"], **fields}
    return LineSurveyRule.objects.create(tenant=tenant, match="regex", pattern=pattern, **fields)


def rule_form(tenant, pattern: str) -> dict:
    return {
        "tenant": tenant.pk,
        "name": "参加",
        "match": "regex",
        "pattern": pattern,
        "add_tags": '["shoot_yes"]',
        "remove_tags": "[]",
        "priority": "100",
        "is_active": "on",
    }


def test_it_answers_a_catastrophic_backtracking_pattern(tenant):
    """`(a+)+$` backtracks 2**40 times on 40 a's and a b with a backtracking engine; RE2 does not."""
    rule = regex_rule(tenant, r"(a+)+$")

    assert rule.matches("a" * 40 + "b") is False
    assert rule.matches("b" + "a" * 40) is True


def test_it_refuses_a_lookahead_pattern_in_the_admin_form(as_manager, tenant):
    response = as_manager.post(reverse("admin:line_linesurveyrule_add"), rule_form(tenant, r"参加(?=します)"))

    assert response.status_code == 200  # the form again, with the reason
    page = response.content.decode()
    assert "正規表現として使えません（RE2 の構文で書いてください。" in page
    assert "invalid perl operator: (?=" in page
    assert not LineSurveyRule.objects.exists()


def test_it_refuses_a_backreference_pattern_on_the_model(tenant):
    rule = LineSurveyRule(tenant=tenant, name="繰り返し", match="regex", pattern=r"(参加)\1")

    with pytest.raises(ValidationError) as raised:
        rule.full_clean()

    assert raised.value.message_dict["pattern"][0].endswith("は使えません）: invalid escape sequence: \\1")


def test_it_saves_an_re2_pattern_from_the_admin_form(as_manager, tenant):
    response = as_manager.post(reverse("admin:line_linesurveyrule_add"), rule_form(tenant, r"^参加\p{Nd}+"))

    assert response.status_code == 302
    assert LineSurveyRule.objects.get().pattern == r"^参加\p{Nd}+"


def test_it_skips_a_stored_pattern_re2_refuses_and_applies_the_others(client, tenant, line, caplog):
    """A lookahead stored before patterns were checked with RE2: that rule is skipped and logged."""
    bad = regex_rule(tenant, r"参加(?=します)", name="先読み", add_tags=["lookahead"])
    regex_rule(tenant, r"参加", name="参加", add_tags=["shoot_yes"])
    message = {"id": "1", "type": "text", "quoteToken": "q", "text": "参加します"}

    with caplog.at_level(logging.WARNING, logger="line.inbound_models"):
        deliver(client, fixture("message_text", message=message))

    assert LineContact.objects.get(user_id=USER).tags == ["shoot_yes"]
    assert LineWebhookEvent.objects.get().detail == "rules 参加 → tags ['shoot_yes']"
    assert f"survey rule {bad.pk} (tenant {tenant.pk}) skipped" in caplog.text
