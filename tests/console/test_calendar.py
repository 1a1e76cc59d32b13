"""The 配信カレンダー: a week or a month (JST) of deliveries and LINE group posts, scoped to the user's tenants."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
import time_machine
from django.urls import reverse

from console.calendar import MONTH_CELL_LIMIT
from console.models import DeliveryOutcome
from core.timeutil import JST
from deliveries.models import (
    STATUS_APPROVED,
    STATUS_DELIVERED,
    STATUS_ERROR,
    DeliveryAttempt,
    DeliverySchedule,
)
from line.models import LineSource
from linepush.models import LinePushItem
from tests.helpers.console import messages_of
from tests.helpers.factories import ContentTaskFactory

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=JST)  # a Tuesday: the week is Mon 11/30 – Sun 12/6
QUIET = {"enabled": True, "ranges": [{"from": "22:30", "to": "08:00"}], "mode": "defer"}
URL = reverse("admin:calendar")


@pytest.fixture(autouse=True)
def frozen_now():
    with time_machine.travel(NOW, tick=False):
        yield


def at(day: int, hour: int, minute: int = 0, month: int = 12) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=JST)


def scheduled(tenant, key: str, due: datetime, channel: str = "line") -> DeliverySchedule:
    task = ContentTaskFactory(
        tenant=tenant, issue_key=key, summary=f"{key} の告知", channel=channel, status_name=STATUS_APPROVED
    )
    return DeliverySchedule.objects.create(
        tenant=tenant, task=task, name=f"s-{tenant.slug}-{key}", due_at=due, reason="approval"
    )


def sent(tenant, key: str, when: datetime, channel: str = "line"):
    """A delivery that ended before outcomes were recorded: its attempt and 自動配信実行日時."""
    task = ContentTaskFactory(
        tenant=tenant,
        issue_key=key,
        channel=channel,
        status_name=STATUS_DELIVERED,
        delivered_at=when,
        approval_seq=1,
    )
    attempt(task, DeliveryAttempt.Outcome.SENT, when)
    return task


def failed(tenant, key: str, when: datetime, channel: str = "line"):
    task = ContentTaskFactory(
        tenant=tenant, issue_key=key, channel=channel, status_name=STATUS_ERROR, approval_seq=1
    )
    attempt(task, DeliveryAttempt.Outcome.FAILED, when)
    return task


def attempt(task, outcome: str, when: datetime) -> None:
    with time_machine.travel(when, tick=False):
        DeliveryAttempt.objects.create(
            tenant=task.tenant,
            task=task,
            approval_seq=1,
            channel=task.channel,
            endpoint="/send",
            outcome=outcome,
        )


def waiting(tenant, key: str, when: datetime, channel: str = "line"):
    return ContentTaskFactory(
        tenant=tenant, issue_key=key, channel=channel, publish_at=when, status_name="処理中"
    )


def post(tenant, key: str, when: datetime, status: str = LinePushItem.Status.PENDING, text: str = "連絡"):
    return LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="C" + "a" * 32,
        trigger_type="reminder",
        payload=[{"type": "text", "text": text}],
        dedupe_key=key,
        scheduled_at=when,
        status=status,
        sent_at=when if status == LinePushItem.Status.SENT else None,
    )


def calendar_of(client, **params):
    response = client.get(URL, params)
    assert response.status_code == 200
    return response.context["calendar"]


def placed(calendar) -> set[tuple[str, int, str, str, str]]:
    """(date, hour, channel, state, title) of every entry drawn in a week view."""
    return {
        (day.date.isoformat(), hour, s.entry.channel, s.entry.state, s.entry.title)
        for day in calendar.days
        for hour, slot in enumerate(day.hours)
        for s in slot.shown
    }


# -- what is drawn, where ----------------------------------------------------------------


def test_it_draws_every_channel_and_state_on_its_jst_day_and_hour(as_manager, tenant):
    LineSource.objects.create(tenant=tenant, group_id="C" + "a" * 32, name="タレント連絡グループ")
    scheduled(tenant, "ACME-1", at(1, 0, 30), "instagram")  # 11/30 15:30 UTC: Dec 1 in Tokyo
    scheduled(tenant, "ACME-2", at(6, 23, 59), "tiktok")  # the week's last minute
    sent(tenant, "ACME-3", at(30, 23, 30, month=11), "hubspot")  # 14:30 UTC, still Nov 30 in Tokyo
    failed(tenant, "ACME-4", at(1, 8, 5))
    waiting(tenant, "ACME-5", at(3, 18, 0), "instagram")
    post(tenant, "p-wait", at(2, 10), LinePushItem.Status.WAITING_APPROVAL)
    post(tenant, "p-sent", at(1, 8, 30), LinePushItem.Status.SENT)
    post(tenant, "p-failed", at(1, 7), LinePushItem.Status.FAILED)
    post(tenant, "p-pending", at(4, 12), LinePushItem.Status.PENDING)
    post(tenant, "p-skipped", at(4, 13), LinePushItem.Status.SKIPPED)  # went nowhere: not drawn
    scheduled(tenant, "ACME-6", at(7, 0, 0))  # next Monday 00:00: next week
    sent(tenant, "ACME-7", at(29, 23, 59, month=11))  # the Sunday before

    calendar = calendar_of(as_manager)

    group = "タレント連絡グループ"
    assert placed(calendar) == {
        ("2026-12-01", 0, "instagram", "scheduled", "ACME-1"),
        ("2026-12-06", 23, "tiktok", "scheduled", "ACME-2"),
        ("2026-11-30", 23, "hubspot", "sent", "ACME-3"),
        ("2026-12-01", 8, "line", "failed", "ACME-4"),
        ("2026-12-03", 18, "instagram", "waiting", "ACME-5"),
        ("2026-12-02", 10, "line_group", "waiting", group),
        ("2026-12-01", 8, "line_group", "sent", group),
        ("2026-12-01", 7, "line_group", "failed", group),
        ("2026-12-04", 12, "line_group", "scheduled", group),
    }
    assert [d.date.isoformat() for d in calendar.days] == [
        f"2026-{d}" for d in ("11-30", *(f"12-0{n}" for n in range(1, 7)))
    ]


def test_it_colours_entries_by_channel_and_state_and_links_them(as_manager, tenant):
    task = scheduled(tenant, "ACME-1", at(2, 10), "hubspot").task
    item = post(tenant, "p-1", at(3, 9), LinePushItem.Status.WAITING_APPROVAL)

    html = as_manager.get(URL).content.decode()

    task_url = reverse("admin:deliveries_contenttask_change", args=[task.pk])
    item_url = reverse("admin:linepush_linepushitem_change", args=[item.pk])
    assert re.search(rf'class="am-cal-entry am-ch-hubspot am-st-scheduled" href="{task_url}"', html)
    assert re.search(rf'class="am-cal-entry am-ch-line_group am-st-waiting" href="{item_url}"', html)
    legend = html[html.index('id="calendar-legend"') :]
    for label in (
        "LINE",
        "Instagram",
        "TikTok",
        "HubSpot",
        "LINE グループ投稿",
        "予約済み",
        "送信済み",
        "失敗",
        "承認待ち",
    ):
        assert label in legend


def test_it_reads_how_past_deliveries_ended(as_manager, tenant):
    recorded = ContentTaskFactory(tenant=tenant, issue_key="ACME-1", channel="line")
    with time_machine.travel(at(30, 11, month=11), tick=False):
        DeliveryOutcome.objects.create(tenant=tenant, task=recorded, kind=DeliveryOutcome.Kind.SENT)
    sent(tenant, "ACME-2", at(1, 7))  # no record: from its attempt and 自動配信実行日時
    refused = ContentTaskFactory(
        tenant=tenant, issue_key="ACME-3", channel="line", status_name=STATUS_ERROR, publish_at=at(2, 3)
    )  # refused at approval (quiet hours): no request, no record
    writing = scheduled(tenant, "ACME-4", at(1, 6))
    with time_machine.travel(at(1, 6, 1), tick=False):
        writing.stage, writing.outcome = DeliverySchedule.Stage.WRITEBACK, {"ok": False, "error": "400"}
        writing.save()  # failed; Backlog not told yet

    entries = {
        (s.entry.title, s.entry.state, s.entry.at) for d in calendar_of(as_manager).days for s in d.slot.shown
    }

    assert entries == {
        ("ACME-1", "sent", at(30, 11, month=11)),
        ("ACME-2", "sent", at(1, 7)),
        ("ACME-3", "failed", refused.publish_at),
        ("ACME-4", "failed", at(1, 6, 1)),
    }


def test_it_draws_a_run_that_failed_before_any_request_once(as_manager, tenant):
    task = ContentTaskFactory(
        tenant=tenant,
        issue_key="ACME-1",
        channel="line",
        status_name=STATUS_ERROR,
        publish_at=at(1, 6),
        approved_at=at(1, 5),
        approval_seq=1,
    )
    with time_machine.travel(at(1, 6, 1), tick=False):  # a render error: recorded, no attempt
        DeliveryOutcome.objects.create(tenant=tenant, task=task, kind=DeliveryOutcome.Kind.FAILED)

    assert placed(calendar_of(as_manager)) == {("2026-12-01", 6, "line", "failed", "ACME-1")}
    assert len(calendar_of(as_manager).days[1].slot.shown) == 1


def test_it_marks_unapproved_tasks_whose_time_has_passed_as_missed(as_manager, tenant):
    waiting(tenant, "ACME-1", at(1, 8))  # an hour ago: it did not go out at that time
    waiting(tenant, "ACME-2", at(1, 10))
    ContentTaskFactory(tenant=tenant, issue_key="ACME-3", publish_at=at(1, 11))  # no channel: not content

    assert {(state, t) for *_, state, t in placed(calendar_of(as_manager))} == {
        ("missed", "ACME-1"),
        ("waiting", "ACME-2"),
    }


# -- who sees what -----------------------------------------------------------------------


def test_it_shows_a_manager_only_their_tenants(as_manager, tenant, other):
    scheduled(tenant, "ACME-1", at(2, 10))
    scheduled(other, "OTHER-1", at(2, 11))
    post(other, "their-post", at(2, 12), text="他社の連絡")

    response = as_manager.get(URL, {"tenant": other.pk})  # asking for theirs does not help

    html = response.content.decode()
    assert "ACME-1" in html and "OTHER-1" not in html and "他社の連絡" not in html
    assert other.name not in html  # not even in the tenant filter
    assert messages_of(response) == ["表示条件の一部が読めないため、既定の値で表示しています。"]


def test_it_lets_a_viewer_look_without_any_action(client, viewer, tenant):
    scheduled(tenant, "ACME-1", at(2, 10))
    post(tenant, "p-1", at(2, 11), LinePushItem.Status.WAITING_APPROVAL)
    client.force_login(viewer)

    html = client.get(URL).content.decode()

    assert len(re.findall(r'class="am-cal-entry [^"]*" href="/admin/', html)) == 2
    main = html[html.index('id="calendar"') :]
    assert 'method="post"' not in main.lower() and "承認する" not in main


def test_it_shows_a_superuser_every_tenant_and_filters_by_one(client, superuser, tenant, other):
    scheduled(tenant, "ACME-1", at(2, 10))
    scheduled(other, "OTHER-1", at(2, 11))
    client.force_login(superuser)

    assert {t for *_, t in placed(calendar_of(client))} == {"ACME-1", "OTHER-1"}
    assert {t for *_, t in placed(calendar_of(client, tenant=other.pk))} == {"OTHER-1"}


def test_it_refuses_staff_without_a_tenant(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody", password="pw", is_staff=True))

    assert client.get(URL).status_code == 403


def test_it_is_linked_from_the_dashboard(as_manager):
    assert f'href="{URL}"' in as_manager.get(reverse("admin:index")).content.decode()


def test_it_speaks_english_when_the_browser_asks(as_manager, tenant):
    scheduled(tenant, "ACME-1", at(2, 10))

    html = as_manager.get(URL, {"view": "month"}, HTTP_ACCEPT_LANGUAGE="en").content.decode()

    assert "Delivery calendar" in html and "Previous month" in html and "12/2026" in html
    assert "1 entry" in html and "予約済み" not in html


# -- quiet hours and today ---------------------------------------------------------------


def test_it_shades_the_quiet_hours_and_marks_entries_inside(as_manager, tenant):
    tenant.quiet_hours = QUIET
    tenant.save()
    scheduled(tenant, "ACME-1", at(1, 23, 0))  # inside
    scheduled(tenant, "ACME-2", at(1, 22, 0))  # before the window

    calendar = calendar_of(as_manager)

    tuesday = calendar.days[1]
    assert [(q.offset, q.size) for q in tuesday.hours[22].quiet] == [(50, 50)]  # from 22:30
    assert [(q.offset, q.size) for q in tuesday.hours[7].quiet] == [(0, 100)]
    assert tuesday.hours[8].quiet == [] and tuesday.hours[12].quiet == []
    assert {s.entry.title: s.quiet for s in tuesday.slot.shown} == {"ACME-1": True, "ACME-2": False}
    html = as_manager.get(URL).content.decode()
    assert 'style="top: 50.0%; height: 50.0%"' in html and "22:30〜08:00 (Asia/Tokyo)" in html


def test_it_draws_the_month_views_day_strip_only_for_quiet_hours_and_explains_it(as_manager, tenant):
    plain = as_manager.get(URL, {"view": "month"}).content.decode()
    tenant.quiet_hours = QUIET
    tenant.save()

    quiet = as_manager.get(URL, {"view": "month"}).content.decode()

    assert 'class="am-cal-strip"' not in plain and 'id="cal-strip-key"' not in plain
    assert quiet.count('class="am-cal-strip"') == 35  # every day of the five weeks drawn
    assert "日付の下の帯: その日の 0 時〜24 時（濃い部分が静粛時間帯）" in quiet


def test_it_shades_a_chosen_tenant_when_tenants_differ(client, superuser, tenant, other):
    tenant.quiet_hours = QUIET
    tenant.save()
    client.force_login(superuser)

    mixed = client.get(URL)
    chosen = calendar_of(client, tenant=tenant.pk)

    assert all(not slot.quiet for day in mixed.context["calendar"].days for slot in day.hours)
    assert 'id="cal-quiet-note"' in mixed.content.decode()
    assert [(q.offset, q.size) for q in chosen.days[0].hours[23].quiet] == [(0, 100)]


def test_it_shades_quiet_hours_kept_in_another_zone_at_their_tokyo_time(as_manager, tenant):
    tenant.quiet_hours = {"enabled": True, "timezone": "UTC", "ranges": [{"from": "00:00", "to": "01:00"}]}
    tenant.save()

    tuesday = calendar_of(as_manager).days[1]

    assert [h for h, slot in enumerate(tuesday.hours) if slot.quiet] == [9]  # 00:00 UTC = 09:00 JST


def test_it_marks_today(as_manager, tenant):
    html = as_manager.get(URL).content.decode()

    assert re.search(
        r'data-date="2026-12-01">12/1 \(火\) <span class="am-cal-today-mark" id="cal-today-mark">', html
    )
    elsewhere = as_manager.get(URL, {"date": "2026-11-20"}).content.decode()
    assert 'id="cal-today-mark"' not in elsewhere


def test_it_draws_a_month_from_monday_with_todays_mark(as_manager, tenant):
    scheduled(tenant, "ACME-1", at(31, 10, month=12))
    calendar = calendar_of(as_manager, view="month", date="2026-12-15")

    assert (calendar.days[0].date.isoformat(), calendar.days[-1].date.isoformat()) == (
        "2026-11-30",
        "2027-01-03",
    )
    assert [d.date.day for d in calendar.days if d.today] == [1]
    assert [s.entry.title for d in calendar.days for s in d.visible] == ["ACME-1"]
    assert calendar.links["previous"] == "?view=month&date=2026-11-01"
    assert calendar.links["next"] == "?view=month&date=2027-01-01"


def test_it_sends_a_full_day_of_a_month_to_its_week(as_manager, tenant):
    for n in range(MONTH_CELL_LIMIT + 2):
        scheduled(tenant, f"ACME-{n}", at(10, 9 + n))

    html = as_manager.get(URL, {"view": "month"}).content.decode()

    assert html.count('class="am-cal-entry am-ch-line am-st-scheduled"') == MONTH_CELL_LIMIT
    assert '<a class="am-cal-more" href="?view=week&amp;date=2026-12-10">ほか 2 件</a>' in html


# -- parameters --------------------------------------------------------------------------


def test_it_moves_a_week_at_a_time(as_manager, tenant):
    calendar = calendar_of(as_manager, view="week", date="2026-12-06", tenant=tenant.pk)

    assert calendar.period.first.isoformat() == "2026-11-30"
    assert calendar.links["previous"] == f"?view=week&date=2026-11-29&tenant={tenant.pk}"
    assert calendar.links["next"] == f"?view=week&date=2026-12-13&tenant={tenant.pk}"
    assert calendar.links["today"] == f"?view=week&date=2026-12-01&tenant={tenant.pk}"


@pytest.mark.parametrize(
    "params",
    [
        {"view": "year"},
        {"date": "2026-13-01"},
        {"date": "12/01/2026"},
        {"date": "9999-12-31"},  # a month after it would not exist
        {"date": "0001-01-01"},
        {"tenant": "abc"},
        {"tenant": "999999"},
        {"view": ["week", "<script>"]},
    ],
)
def test_it_shows_the_current_week_for_a_parameter_it_cannot_read(as_manager, tenant, params):
    response = as_manager.get(URL, params)

    assert response.status_code == 200
    calendar = response.context["calendar"]
    assert (calendar.period.view, calendar.period.first.isoformat()) == ("week", "2026-11-30")
    assert messages_of(response) == ["表示条件の一部が読めないため、既定の値で表示しています。"]


def test_it_stops_navigation_at_the_last_accepted_month(as_manager, tenant):
    calendar = calendar_of(as_manager, view="month", date="2099-12-31")

    assert calendar.links["next"] == "?view=month&date=2099-12-31"
    assert calendar.days[-1].date.isoformat() == "2100-01-03"


# -- cost --------------------------------------------------------------------------------


def _fill(tenant, count: int) -> None:
    LineSource.objects.create(tenant=tenant, group_id="C" + "a" * 32, name="グループ")
    for n in range(count):
        day = 1 + n % 6
        scheduled(tenant, f"S-{n}", at(day, 12), ("line", "instagram", "tiktok", "hubspot")[n % 4])
        sent(tenant, f"D-{n}", at(day, 7))
        failed(tenant, f"F-{n}", at(day, 8))
        waiting(tenant, f"W-{n}", at(day, 20))
        post(
            tenant,
            f"p-{n}",
            at(day, 13),
            (LinePushItem.Status.SENT, LinePushItem.Status.WAITING_APPROVAL)[n % 2],
        )


@pytest.mark.parametrize("view", ["week", "month"])
def test_it_reads_a_bounded_number_of_queries(as_manager, tenant, django_assert_max_num_queries, view):
    _fill(tenant, 30)

    with django_assert_max_num_queries(16):
        calendar = calendar_of(as_manager, view=view)

    assert calendar.count == 150
