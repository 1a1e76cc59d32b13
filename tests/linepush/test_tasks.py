"""The task paths django-q2 keeps in its queue: the LINE webhook's tasks moved to line, and
the ones queued before still run them."""

from __future__ import annotations

import pytest
from django.utils.module_loading import import_string


@pytest.mark.parametrize("name", ["process_line_event", "process_line_events", "retry_line_events"])
def test_a_task_queued_under_its_old_path_runs_the_moved_task(name):
    assert import_string(f"linepush.tasks.{name}") is import_string(f"line.tasks.{name}")
