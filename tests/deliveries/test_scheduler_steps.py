"""run_scheduler's pass runs the steps settings.SCHEDULER_STEPS lists, in its order, and no
other: every queue the pass serves is named in the composition root, none registered at start."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django.utils.module_loading import import_string

from backlog_bridge.events import events_stranded_step
from deliveries.management.commands.run_scheduler import Command
from deliveries.prepare.ahead import prepare_step
from deliveries.publish.scheduler import schedules_step
from deliveries.scheduler_steps import Pass, scheduler_steps, scheduler_steps_run
from deliveries.writeback.queue import writebacks_step
from line.events import line_events_stranded_step
from linepush.push import push_step
from tests.helpers.deliveries import make_schedule

HERE = __name__
calls: list[tuple[str, int]] = []
answers: dict[str, bool | Pass] = {}


def first_step(*, now, limit):
    calls.append(("first", limit))
    return answers.get("first", False)


def second_step(*, now, limit):
    calls.append(("second", limit))
    return answers.get("second", False)


@pytest.fixture(autouse=True)
def fresh():
    calls.clear()
    answers.clear()


def configured(settings, *names: str) -> None:
    settings.SCHEDULER_STEPS = [f"{HERE}.{name}" for name in names]


def test_every_configured_path_imports_a_step(settings):
    for path in settings.SCHEDULER_STEPS:
        assert callable(import_string(path)), path


def test_the_pass_serves_every_queue_in_the_configured_order():
    assert scheduler_steps() == (
        schedules_step,
        writebacks_step,
        prepare_step,
        events_stranded_step,
        line_events_stranded_step,
        push_step,
    )


@pytest.mark.django_db
def test_run_scheduler_runs_exactly_the_configured_steps(settings):
    configured(settings, "first_step", "second_step")
    make_schedule()  # due now: the schedules' step, were it run, would hand it out

    command = Command()
    command.name, command.batch = "test-scheduler", 7
    assert command.handle_one() is Pass.IDLE

    assert calls == [("first", 7), ("second", 7)]


@pytest.mark.django_db
def test_a_changed_setting_takes_effect_at_the_next_pass(settings):
    configured(settings, "first_step")
    scheduler_steps_run(now=timezone.now(), limit=1)
    configured(settings, "second_step")
    scheduler_steps_run(now=timezone.now(), limit=1)

    assert calls == [("first", 1), ("second", 1)]


def test_it_says_whether_any_step_had_work(settings):
    configured(settings, "first_step", "second_step")
    answers["second"] = True

    assert scheduler_steps_run(now=timezone.now(), limit=7) is Pass.WORKED
    assert calls == [("first", 7), ("second", 7)]


def test_a_step_that_holds_due_work_back_makes_the_pass_held_unless_another_handed_work_out(settings):
    configured(settings, "first_step", "second_step")
    answers.update(first=Pass.HELD, second=False)

    assert scheduler_steps_run(now=timezone.now(), limit=1) is Pass.HELD
    answers["second"] = True
    assert scheduler_steps_run(now=timezone.now(), limit=1) is Pass.WORKED
    answers.update(first=Pass.IDLE, second=Pass.IDLE)
    assert scheduler_steps_run(now=timezone.now(), limit=1) is Pass.IDLE


def test_a_path_that_does_not_import_stops_run_scheduler_before_its_loop(settings, monkeypatch):
    configured(settings, "first_step", "no_such_step")
    monkeypatch.setattr("signal.signal", lambda *args: None)
    command = Command()
    monkeypatch.setattr(command, "handle_one", lambda: pytest.fail("the loop ran"))

    with pytest.raises(ImproperlyConfigured, match=f"'{HERE}.no_such_step' does not import"):
        command.handle(poll=0.1, batch=50)
