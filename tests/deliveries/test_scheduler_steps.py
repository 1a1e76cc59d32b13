"""run_scheduler's pass runs the steps apps register (linepush's due pushes) without importing them."""

from __future__ import annotations

from django.utils import timezone

from deliveries import scheduler_steps
from deliveries.scheduler_steps import SCHEDULER_STEPS, Pass, scheduler_step_register, scheduler_steps_run
from linepush.push import push_step


def test_it_has_linepushs_step_registered_by_its_app_config():
    assert push_step in SCHEDULER_STEPS


def test_it_runs_every_step_and_says_whether_any_had_work(monkeypatch):
    calls = []
    monkeypatch.setattr(scheduler_steps, "SCHEDULER_STEPS", [])
    scheduler_step_register(lambda *, now, limit: calls.append(("idle", limit)) or False)
    scheduler_step_register(lambda *, now, limit: calls.append(("busy", limit)) or True)
    assert scheduler_steps_run(now=timezone.now(), limit=7) is Pass.WORKED
    assert calls == [("idle", 7), ("busy", 7)]


def test_it_registers_a_step_once(monkeypatch):
    monkeypatch.setattr(scheduler_steps, "SCHEDULER_STEPS", [])

    def step(*, now, limit):
        return False

    scheduler_step_register(step)
    scheduler_step_register(step)
    assert scheduler_steps.SCHEDULER_STEPS == [step]
    assert scheduler_steps_run(now=timezone.now(), limit=1) is Pass.IDLE


def test_a_step_that_holds_due_work_back_makes_the_pass_held_unless_another_handed_work_out(monkeypatch):
    monkeypatch.setattr(scheduler_steps, "SCHEDULER_STEPS", [])
    answers = {"push": Pass.HELD, "schedules": False}
    scheduler_step_register(lambda *, now, limit: answers["push"])
    scheduler_step_register(lambda *, now, limit: answers["schedules"])

    assert scheduler_steps_run(now=timezone.now(), limit=1) is Pass.HELD
    answers["schedules"] = True
    assert scheduler_steps_run(now=timezone.now(), limit=1) is Pass.WORKED
    answers["push"] = answers["schedules"] = Pass.IDLE
    assert scheduler_steps_run(now=timezone.now(), limit=1) is Pass.IDLE
