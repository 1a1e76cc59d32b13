"""What an API token may do: the trigger types it lists, approval unless it skips it, a
`scheduled_at` within its window, and a rate per token (429 with Retry-After)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command

from core.timeutil import JST
from linepush.api import throttle_rate_require
from linepush.models import LineApiToken, LinePushItem
from tests.helpers.linepush import group, shop

pytestmark = pytest.mark.django_db
URL = "/api/linepush/items/"
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def tenant(db):
    return shop()


def issue(tenant, triggers=None, skip_approval=False) -> str:
    return LineApiToken.issue(
        tenant=tenant, name="talent-hub", triggers=triggers, skip_approval=skip_approval
    )[1]


def post(client, token: str, team, key: str = "k1", meta: dict | None = None, **fields):
    data = {
        "ext_group_id": team.group_id,
        "trigger_type": "signal_approved",
        "payload": [{"type": "text", "text": "契約の更新が承認されました"}],
        "dedupe_key": key,
        **fields,
    }
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}", **(meta or {})}
    return client.post(URL, data, content_type="application/json", **headers)


# -- trigger types and approval ----------------------------------------------------------------


def test_it_refuses_a_trigger_type_the_token_does_not_list(client, tenant):
    team = group(tenant)

    response = post(client, issue(tenant), team, trigger_type="task_approved")

    assert response.status_code == 403
    assert response.json() == {
        "trigger_type": [
            "このトークンでは trigger_type「task_approved」は使えません（使えるもの: signal_approved）。"
        ]
    }
    assert not LinePushItem.objects.exists()


@pytest.mark.parametrize("trigger", ["task_approved", "reminder"])
def test_a_tokens_post_of_a_routine_trigger_still_waits_for_a_manager(client, tenant, trigger):
    team = group(tenant)

    response = post(client, issue(tenant, triggers=[trigger]), team, trigger_type=trigger)

    assert response.status_code == 201
    assert LinePushItem.objects.get().status == LinePushItem.Status.WAITING_APPROVAL


def test_a_token_that_skips_approval_follows_the_tenants_trigger_policies(client, tenant):
    team = group(tenant)
    token = issue(tenant, triggers=["task_approved", "escalation"], skip_approval=True)

    routine = post(client, token, team, key="a", trigger_type="task_approved").json()
    risky = post(client, token, team, key="b", trigger_type="escalation").json()

    assert (routine["status"], risky["status"]) == ("pending", "waiting_approval")


def test_it_issues_a_token_with_its_triggers_and_approval_from_the_command(tenant, capsys):
    call_command(
        "linepush_token", "shop", "--name", "hub", "--triggers", "reminder,task_approved", "--skip-approval"
    )

    row = LineApiToken.objects.get(name="hub")
    assert (row.allowed_triggers, row.skip_approval) == (["reminder", "task_approved"], True)
    assert capsys.readouterr().out.startswith("lp_")


def test_the_command_refuses_an_unknown_trigger(tenant):
    with pytest.raises(CommandError, match="トリガーは"):
        call_command("linepush_token", "shop", "--triggers", "anything")

    assert not LineApiToken.objects.exists()


def test_a_token_lists_only_signal_approved_and_skips_nothing_by_default(tenant):
    LineApiToken.issue(tenant=tenant, name="hub")

    row = LineApiToken.objects.get()
    assert (row.allowed_triggers, row.skip_approval) == (["signal_approved"], False)


# -- scheduled_at --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "reason"),
    [
        ("1970-01-01T00:00:00+09:00", "過去の日時です（5 分より前は指定できません）。"),
        ("2026-12-01T08:54:00+09:00", "過去の日時です（5 分より前は指定できません）。"),
        ("2027-12-02T09:00:00+09:00", "先すぎる日時です（365 日より先は指定できません）。"),
    ],
)
def test_it_refuses_a_scheduled_at_outside_its_window(client, tenant, when, reason):
    response = post(client, issue(tenant), group(tenant), scheduled_at=when)

    assert response.status_code == 400
    assert response.json() == {"scheduled_at": [reason]}
    assert not LinePushItem.objects.exists()


@pytest.mark.parametrize("offset", [timedelta(minutes=-4), timedelta(days=364)])
def test_it_accepts_a_scheduled_at_within_its_window(client, tenant, offset):
    response = post(client, issue(tenant), group(tenant), scheduled_at=(NOW + offset).isoformat())

    assert response.status_code == 201
    assert LinePushItem.objects.get().scheduled_at == NOW + offset


# -- the throttle ----------------------------------------------------------------------------------


def test_it_answers_429_with_retry_after_over_the_tokens_rate(client, tenant, settings):
    settings.LINEPUSH_API_THROTTLE_RATE = "2/min"
    team, token, other = group(tenant), issue(tenant), issue(tenant)

    answers = [post(client, token, team, key=f"k{n}").status_code for n in range(3)]
    refused = post(client, token, team, key="k9")

    assert answers == [201, 201, 429]
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    assert post(client, other, team, key="other").status_code == 201  # per token
    assert LinePushItem.objects.count() == 3


def test_the_throttle_lets_the_token_post_again_after_its_window(client, tenant, settings):
    settings.LINEPUSH_API_THROTTLE_RATE = "1/min"
    team, token = group(tenant), issue(tenant)
    assert post(client, token, team, key="a").status_code == 201
    assert post(client, token, team, key="b").status_code == 429

    with time_machine.travel(NOW + timedelta(seconds=61), tick=False):
        assert post(client, token, team, key="c").status_code == 201


@pytest.mark.parametrize("rate", ["60", "60/fortnight", "0/min", "many/min"])
def test_a_throttle_rate_drf_cannot_read_stops_the_start(settings, rate):
    settings.LINEPUSH_API_THROTTLE_RATE = rate

    with pytest.raises(ImproperlyConfigured, match="LINEPUSH_API_THROTTLE_RATE must be like 60/min"):
        throttle_rate_require()


def test_wrong_tokens_are_throttled_per_client_address(client, tenant):
    team, good = group(tenant), issue(tenant)

    answers = [post(client, f"lp_wrong{n}", team).status_code for n in range(30)]
    refused = post(client, good, team)  # the right token too, from that address

    assert answers == [401] * 10 + [429] * 20  # LINEPUSH_API_AUTH_FAILURE_RATE 10/min
    assert refused.status_code == 429 and refused["Retry-After"] == "60"
    elsewhere = post(client, good, team, meta={"REMOTE_ADDR": "198.51.100.9"})
    assert elsewhere.status_code == 201  # per address: another client is not affected


def test_right_tokens_do_not_count_as_failures(client, tenant, settings):
    settings.LINEPUSH_API_AUTH_FAILURE_RATE = "2/min"
    team, good = group(tenant), issue(tenant)

    answers = [post(client, good, team, key=f"k{n}").status_code for n in range(4)]
    answers += [post(client, "lp_wrong", team).status_code for _ in range(3)]

    assert answers == [201] * 4 + [401, 401, 429]


def test_the_failed_authentication_throttle_opens_again_after_its_window(client, tenant, settings):
    settings.LINEPUSH_API_AUTH_FAILURE_RATE = "1/min"
    team, good = group(tenant), issue(tenant)
    assert [post(client, "lp_wrong", team).status_code for _ in range(2)] == [401, 429]

    with time_machine.travel(NOW + timedelta(seconds=61), tick=False):
        assert post(client, good, team).status_code == 201


def test_behind_a_counted_proxy_wrong_tokens_count_per_forwarded_address(client, tenant, settings):
    settings.LINEPUSH_API_AUTH_FAILURE_RATE = "1/min"
    settings.AXES_IPWARE_PROXY_COUNT = 0  # one proxy appends the client's address
    settings.AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR")
    settings.IPWARE_STRICT = False
    team, good = group(tenant), issue(tenant)

    def via_proxy(forwarded: str) -> dict:
        return {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_FORWARDED_FOR": forwarded}

    first = post(client, "lp_wrong", team, meta=via_proxy("203.0.113.7"))
    again = post(client, "lp_wrong", team, meta=via_proxy("6.6.6.6, 203.0.113.7"))  # a forged part
    other = post(client, good, team, meta=via_proxy("198.51.100.9"))

    assert (first.status_code, again.status_code, other.status_code) == (401, 429, 201)


@pytest.mark.parametrize("rate", ["10", "0/min"])
def test_a_failure_rate_drf_cannot_read_stops_the_start(settings, rate):
    settings.LINEPUSH_API_AUTH_FAILURE_RATE = rate

    with pytest.raises(ImproperlyConfigured, match="LINEPUSH_API_AUTH_FAILURE_RATE must be like 60/min"):
        throttle_rate_require()
