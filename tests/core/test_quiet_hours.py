from __future__ import annotations

from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import ValidationError

from core.quiet_hours import QuietAction, QuietHours, quiet_hours_apply, quiet_windows

JST = ZoneInfo("Asia/Tokyo")
NEW_YORK = ZoneInfo("America/New_York")

SEED_BLOCK = {
    "enabled": True,
    "timezone": "Asia/Tokyo",
    "ranges": [{"from": "22:00", "to": "08:00"}],
}

PROJECT_YML = """\
default_timezone: Asia/Tokyo
quiet_hours:
  enabled: true
  timezone: Asia/Tokyo
  ranges:
    - { from: "22:00", to: "08:00" }
  mode: defer
"""


def jst(*args: int) -> datetime:
    return datetime(*args, tzinfo=JST)


def quiet(*ranges: tuple[str, str], mode: str = "reject", timezone: str = "Asia/Tokyo"):
    return QuietHours.from_config(
        {
            "enabled": True,
            "timezone": timezone,
            "ranges": [{"from": start, "to": end} for start, end in ranges],
            "mode": mode,
        }
    )


def messages(caught: pytest.ExceptionInfo[ValidationError]) -> list[str]:
    return caught.value.messages


# --- from_config / to_config ----------------------------------------------------------


@pytest.mark.parametrize("data", [None, {}])
def test_it_is_disabled_without_config(data):
    assert QuietHours.from_config(data) == QuietHours(enabled=False)


def test_it_reads_the_seed_block():
    assert QuietHours.from_config(SEED_BLOCK) == QuietHours(
        enabled=True, timezone="Asia/Tokyo", ranges=((time(22), time(8)),), mode="reject"
    )


def test_it_reads_24_00_as_the_end_of_the_day():
    assert quiet(("22:00", "24:00")).ranges == ((time(22), time(0)),)


def test_it_treats_a_block_without_enabled_as_enabled():
    block = {"ranges": [{"from": "22:00", "to": "08:00"}]}

    assert QuietHours.from_config(block).enabled is True


@pytest.mark.parametrize(
    "hours",
    [
        QuietHours(),
        QuietHours(enabled=True, ranges=((time(22), time(8)),), mode="defer"),
        QuietHours(
            enabled=True,
            timezone="America/New_York",
            ranges=((time(22), time(0)), (time(0), time(7, 30))),
        ),
    ],
)
def test_it_round_trips_through_to_config(hours):
    assert QuietHours.from_config(hours.to_config()) == hours


def test_it_writes_a_midnight_end_as_24_00():
    assert quiet(("22:00", "24:00")).to_config()["ranges"] == [{"from": "22:00", "to": "24:00"}]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"timezone": "Mars/Olympus"},
            "quiet_hours.timezone「Mars/Olympus」はタイムゾーンとして不明",
        ),
        ({"timezone": ""}, "quiet_hours.timezone「」はタイムゾーンとして不明"),
        ({"mode": "later"}, "quiet_hours.mode「later」は使えません（reject か defer"),
        ({"enabled": "yes"}, "quiet_hours.enabled の値「yes」は使えません"),
        ({"ranges": "22:00-08:00"}, "quiet_hours.ranges の値「22:00-08:00」は使えません"),
        ({"ranges": []}, "有効（enabled: true）なのに ranges がありません"),
        ({"colour": "red"}, "quiet_hours の「colour」は不明な項目です"),
        (
            {"ranges": [{"from": "25:00", "to": "08:00"}]},
            "quiet_hours.ranges[0].from の値「25:00」は時刻として読めません",
        ),
        (
            {"ranges": [{"from": "24:00", "to": "08:00"}]},
            "quiet_hours.ranges[0].from の値「24:00」は時刻として読めません",
        ),
        (
            {"ranges": [{"from": "22:00", "to": "8時"}]},
            "quiet_hours.ranges[0].to の値「8時」は時刻として読めません",
        ),
        (
            {"ranges": [{"from": "22:00", "to": 480}]},
            "quiet_hours.ranges[0].to の値「480」は時刻として読めません",
        ),
        ({"ranges": [{"from": "22:00"}]}, "quiet_hours.ranges[0].to がありません"),
        (
            {"ranges": [{"from": "22:00", "to": "08:00", "until": "09:00"}]},
            "quiet_hours.ranges[0] の「until」は不明な項目です",
        ),
        (
            {"ranges": [{"from": "10:00", "to": "10:00"}]},
            "quiet_hours.ranges[0]: from と to が同じ 10:00 です",
        ),
        (
            {"ranges": [{"from": "00:00", "to": "12:00"}, {"from": "12:00", "to": "24:00"}]},
            "24 時間すべてを覆っている",
        ),
    ],
)
def test_it_names_each_bad_setting(change, expected):
    with pytest.raises(ValidationError) as caught:
        QuietHours.from_config({**SEED_BLOCK, **change})

    assert any(expected in message for message in messages(caught)), messages(caught)


def test_it_reports_every_problem_at_once():
    bad = {
        "enabled": True,
        "timezone": "Nowhere/Town",
        "ranges": [{"from": "25:00", "to": "08:00"}, {"from": "10:00", "to": "10:00"}],
        "mode": "later",
        "extra": 1,
    }

    with pytest.raises(ValidationError) as caught:
        QuietHours.from_config(bad)

    assert len(messages(caught)) == 5


def test_it_keeps_range_indexes_when_an_earlier_range_is_unreadable():
    ranges = [{"from": "xx", "to": "08:00"}, {"from": "10:00", "to": "10:00"}]

    with pytest.raises(ValidationError) as caught:
        QuietHours.from_config({**SEED_BLOCK, "ranges": ranges})

    assert any(m.startswith("quiet_hours.ranges[1]: from と to が同じ") for m in messages(caught))


def test_it_rejects_a_config_that_is_not_a_mapping():
    with pytest.raises(ValidationError, match="キーと値の組"):
        QuietHours.from_config(["22:00", "08:00"])


def test_it_validates_direct_construction_too():
    with pytest.raises(ValidationError, match="ranges がありません"):
        QuietHours(enabled=True)


# --- from_yaml -----------------------------------------------------------------------


def test_it_reads_the_block_from_a_whole_project_yml():
    hours = QuietHours.from_yaml(PROJECT_YML)

    assert hours == QuietHours(enabled=True, ranges=((time(22), time(8)),), mode="defer")


def test_it_reads_a_bare_block():
    text = 'enabled: true\nranges:\n  - { from: "22:00", to: "08:00" }\n'

    assert QuietHours.from_yaml(text).ranges == ((time(22), time(8)),)


def test_it_reads_unquoted_times_that_yaml_1_1_would_turn_into_integers():
    text = "quiet_hours:\n  enabled: true\n  ranges:\n    - { from: 22:00, to: 8:00 }\n"

    assert QuietHours.from_yaml(text).ranges == ((time(22), time(8)),)


@pytest.mark.parametrize("text", ["", "default_timezone: Asia/Tokyo\n", "quiet_hours:\n"])
def test_it_is_disabled_when_the_yaml_has_no_block(text):
    assert QuietHours.from_yaml(text) == QuietHours()


def test_it_turns_yaml_syntax_errors_into_a_validation_error():
    with pytest.raises(ValidationError, match="project.yml を YAML として読めません"):
        QuietHours.from_yaml("quiet_hours:\n  ranges: [ { from: 22:00\n")


def test_it_rejects_yaml_that_is_not_a_mapping():
    with pytest.raises(ValidationError, match="project.yml の値"):
        QuietHours.from_yaml("- 22:00\n- 08:00\n")


def test_it_reports_bad_values_inside_the_yaml_block():
    with pytest.raises(ValidationError, match="quiet_hours.mode「later」"):
        QuietHours.from_yaml(PROJECT_YML.replace("defer", "later"))


# --- check -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "inside"),
    [
        (jst(2026, 5, 15, 21, 59, 59), False),
        (jst(2026, 5, 15, 22, 0), True),
        (jst(2026, 5, 15, 23, 0), True),
        (jst(2026, 5, 16, 0, 0), True),
        (jst(2026, 5, 16, 7, 59, 59), True),
        (jst(2026, 5, 16, 8, 0), False),
        (jst(2026, 5, 16, 12, 0), False),
    ],
)
def test_it_checks_a_range_crossing_midnight_with_an_exclusive_end(when, inside):
    assert quiet(("22:00", "08:00")).check(when).inside is inside


@pytest.mark.parametrize(
    ("when", "end"),
    [
        (jst(2026, 5, 15, 23, 0), jst(2026, 5, 16, 8, 0)),
        (jst(2026, 5, 16, 3, 0), jst(2026, 5, 16, 8, 0)),
    ],
)
def test_it_gives_the_end_of_the_window(when, end):
    assert quiet(("22:00", "08:00")).check(when).window_end == end


def test_it_checks_a_same_day_range():
    hours = quiet(("12:00", "13:00"))

    assert hours.check(jst(2026, 5, 15, 12, 30)).window_end == jst(2026, 5, 15, 13, 0)
    assert hours.check(jst(2026, 5, 15, 13, 0)).inside is False


def test_it_evaluates_other_zones_in_jst_terms_of_the_config():
    when_utc = datetime(2026, 5, 15, 14, 0, tzinfo=UTC)  # 23:00 JST

    verdict = quiet(("22:00", "08:00")).check(when_utc)

    assert verdict.inside is True
    assert verdict.window_end == jst(2026, 5, 16, 8, 0)


def test_it_chains_touching_ranges_across_midnight():
    hours = quiet(("22:00", "24:00"), ("00:00", "08:00"), mode="defer")

    verdict = hours.check(jst(2026, 5, 15, 23, 0))

    assert verdict.window_end == jst(2026, 5, 16, 8, 0)


def test_it_chains_overlapping_ranges():
    hours = quiet(("21:00", "23:00"), ("22:30", "06:00"), ("05:00", "07:00"))

    verdict = hours.check(jst(2026, 5, 15, 21, 30))

    assert verdict.window_end == jst(2026, 5, 16, 7, 0)


def test_it_shows_the_whole_chained_window_in_the_message():
    hours = quiet(("22:00", "24:00"), ("00:00", "08:00"))

    verdict = hours.check(jst(2026, 5, 16, 1, 0))

    assert "静粛時間帯 22:00〜08:00 に入っています" in verdict.message


def test_it_does_not_chain_ranges_with_a_gap():
    hours = quiet(("22:00", "23:00"), ("23:30", "06:00"))

    assert hours.check(jst(2026, 5, 15, 22, 30)).window_end == jst(2026, 5, 15, 23, 0)
    assert hours.check(jst(2026, 5, 15, 23, 15)).inside is False


def test_it_explains_a_rejection_in_japanese():
    verdict = quiet(("22:00", "08:00")).check(jst(2026, 5, 15, 23, 0))

    assert verdict.message == (
        "投稿日時 2026-05-15 23:00 (JST) は静粛時間帯 22:00〜08:00 に入っています。"
        "静粛時間帯の外になるよう投稿日時を見直してください。"
    )


def test_it_explains_a_deferral_with_the_new_time():
    verdict = quiet(("22:00", "08:00"), mode="defer").check(jst(2026, 5, 15, 23, 0))

    assert verdict.message == (
        "投稿日時 2026-05-15 23:00 (JST) は静粛時間帯 22:00〜08:00 に入っています。"
        "静粛時間帯が終わる 2026-05-16 08:00 (JST) に延期します。"
    )


def test_it_shows_seconds_only_when_there_are_some():
    verdict = quiet(("22:00", "08:00")).check(jst(2026, 5, 15, 23, 0, 30))

    assert verdict.message.startswith("投稿日時 2026-05-15 23:00:30 (JST) は")


def test_it_is_never_inside_when_disabled():
    hours = QuietHours(enabled=False, ranges=((time(0), time(23, 59)),))

    verdict = hours.check(jst(2026, 5, 15, 12, 0))

    assert (verdict.inside, verdict.window_end, verdict.message) == (False, None, "静粛時間帯は無効です。")


def test_it_says_when_a_time_is_outside():
    verdict = quiet(("22:00", "08:00")).check(jst(2026, 5, 15, 12, 0))

    assert (verdict.inside, verdict.window_end, verdict.message) == (
        False,
        None,
        "投稿日時 2026-05-15 12:00 (JST) は静粛時間帯の外です。",
    )


def test_the_verdict_reads_in_the_admins_language_but_stays_japanese_for_backlog():
    from django.utils import translation

    verdict = quiet(("22:00", "08:00"), mode="defer").check(jst(2026, 5, 15, 23, 0))

    with translation.override("en"):
        assert str(verdict.display) == (
            "The publish time 2026-05-15 23:00 (JST) falls in the quiet hours 22:00–08:00; "
            "the post is deferred to 2026-05-16 08:00 (JST), when they end."
        )
        assert verdict.message.startswith("投稿日時 2026-05-15 23:00 (JST) は静粛時間帯 22:00〜08:00")


def test_it_refuses_a_naive_datetime():
    with pytest.raises(ValueError, match="aware"):
        quiet(("22:00", "08:00")).check(datetime(2026, 5, 15, 23, 0))


# --- DST (America/New_York: clocks go forward 2026-03-08 02:00, back 2026-11-01 02:00) ---


def test_it_ends_an_overnight_window_at_local_wall_time_across_spring_forward():
    hours = quiet(("22:00", "08:00"), timezone="America/New_York")

    verdict = hours.check(datetime(2026, 3, 7, 23, 0, tzinfo=NEW_YORK))

    assert verdict.window_end == datetime(2026, 3, 8, 8, 0, tzinfo=NEW_YORK)
    assert verdict.window_end.astimezone(UTC) == datetime(2026, 3, 8, 12, 0, tzinfo=UTC)


def test_it_ends_an_overnight_window_at_local_wall_time_across_fall_back():
    hours = quiet(("22:00", "08:00"), timezone="America/New_York")

    verdict = hours.check(datetime(2026, 10, 31, 23, 0, tzinfo=NEW_YORK))

    assert verdict.window_end.astimezone(UTC) == datetime(2026, 11, 1, 13, 0, tzinfo=UTC)


def test_it_ends_at_the_jump_when_the_end_time_is_skipped_by_spring_forward():
    hours = quiet(("01:00", "02:30"), timezone="America/New_York")

    verdict = hours.check(datetime(2026, 3, 8, 1, 30, tzinfo=NEW_YORK))

    assert verdict.window_end.astimezone(UTC) == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)
    assert verdict.window_end.strftime("%H:%M %Z") == "03:00 EDT"


@pytest.mark.parametrize(
    ("fold", "end_utc"),
    [
        (0, datetime(2026, 11, 1, 5, 30, tzinfo=UTC)),  # first 01:15 (EDT) ends at first 01:30
        (1, datetime(2026, 11, 1, 6, 30, tzinfo=UTC)),  # repeated 01:15 (EST) ends at 01:30 EST
    ],
)
def test_it_ends_at_the_next_occurrence_of_a_repeated_wall_time(fold, end_utc):
    hours = quiet(("00:00", "01:30"), timezone="America/New_York")
    when = datetime(2026, 11, 1, 1, 15, fold=fold, tzinfo=NEW_YORK)

    verdict = hours.check(when)

    assert verdict.inside is True
    assert verdict.window_end.astimezone(UTC) == end_utc


def test_it_reads_the_wall_clock_of_the_config_zone_on_a_dst_day():
    hours = quiet(("22:00", "08:00"), timezone="America/New_York")
    seven_thirty_edt = datetime(2026, 3, 8, 11, 30, tzinfo=UTC)
    eight_edt = datetime(2026, 3, 8, 12, 0, tzinfo=UTC)

    assert hours.check(seven_thirty_edt).inside is True
    assert hours.check(eight_edt).inside is False


def test_it_names_the_local_zone_abbreviation_in_the_message():
    hours = quiet(("22:00", "08:00"), timezone="America/New_York")

    verdict = hours.check(datetime(2026, 7, 1, 23, 0, tzinfo=NEW_YORK))

    assert verdict.message.startswith("投稿日時 2026-07-01 23:00 (EDT) は静粛時間帯 22:00〜08:00")


# -- applying the mode: the one function every caller uses ------------------------


def test_it_keeps_a_time_outside_the_quiet_hours():
    quiet = QuietHours.from_config({**SEED_BLOCK, "mode": "defer"})
    when = datetime(2026, 5, 15, 12, 0, tzinfo=JST)
    decision = quiet_hours_apply(quiet=quiet, when=when)
    assert (decision.action, decision.due_at) == (QuietAction.SEND, when)


def test_it_defers_a_time_inside_to_the_windows_end_in_defer_mode():
    quiet = QuietHours.from_config({**SEED_BLOCK, "mode": "defer"})
    decision = quiet_hours_apply(quiet=quiet, when=datetime(2026, 5, 15, 23, 0, tzinfo=JST))
    assert decision.action == QuietAction.DEFER
    assert decision.due_at == datetime(2026, 5, 16, 8, 0, tzinfo=JST)


def test_it_rejects_a_time_inside_in_reject_mode():
    quiet = QuietHours.from_config({**SEED_BLOCK, "mode": "reject"})
    when = datetime(2026, 5, 15, 23, 0, tzinfo=JST)
    decision = quiet_hours_apply(quiet=quiet, when=when)
    assert (decision.action, decision.due_at) == (QuietAction.REJECT, when)
    assert "静粛時間帯" in decision.verdict.message


# -- the windows of a period (the admin's calendar) ------------------------------------------


def test_it_lists_the_windows_of_a_period_clipped_and_merged():
    hours = quiet(("22:00", "24:00"), ("00:00", "06:00"), ("12:00", "12:30"))

    windows = quiet_windows(quiet=hours, start=jst(2026, 12, 1), end=jst(2026, 12, 3))

    assert [(a.astimezone(JST), b.astimezone(JST)) for a, b in windows] == [
        (jst(2026, 12, 1, 0), jst(2026, 12, 1, 6)),  # the night before, clipped at the start
        (jst(2026, 12, 1, 12), jst(2026, 12, 1, 12, 30)),
        (jst(2026, 12, 1, 22), jst(2026, 12, 2, 6)),  # two touching ranges: one window
        (jst(2026, 12, 2, 12), jst(2026, 12, 2, 12, 30)),
        (jst(2026, 12, 2, 22), jst(2026, 12, 3, 0)),  # clipped at the end
    ]


def test_it_lists_windows_kept_in_another_zone_at_their_instants():
    hours = quiet(("22:00", "07:00"), timezone="America/New_York")

    windows = quiet_windows(quiet=hours, start=jst(2026, 12, 2), end=jst(2026, 12, 3))

    # 22:00–07:00 in New York (UTC-5) is 12:00–21:00 in Tokyo
    assert [(a.astimezone(JST), b.astimezone(JST)) for a, b in windows] == [
        (jst(2026, 12, 2, 12), jst(2026, 12, 2, 21))
    ]


def test_it_lists_no_window_when_disabled():
    assert quiet_windows(quiet=QuietHours(), start=jst(2026, 12, 1), end=jst(2026, 12, 8)) == []
