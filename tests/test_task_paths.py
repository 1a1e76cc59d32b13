"""Every task path the product hands django-q2 as a string imports: the ones it enqueues
(`hand_out`, `async_task`, an intake's drain), the recurring jobs' Schedule rows, and the
paths a migration writes into stored Schedule rows. django-q2 keeps these strings in its
queue and in the database, so a task queued or a row stored before an upgrade runs after
it only if its path still resolves. The paths are read from the source: a new one is
checked without being listed here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.utils.module_loading import import_string

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("core", "backlog_bridge", "line", "deliveries", "linepush", "console")
ENQUEUERS = {"hand_out", "async_task", "schedule"}  # a task path as the first argument
PATH_KEYWORDS = {"func", "drain_task", "hook"}  # a task path given by name
READS = {"filter", "exclude", "get"}  # a Schedule row looked up, not written
# The django-q2 tasks of deliveries, by the paths queued tasks and Schedule rows name.
DELIVERIES_TASKS = (
    "deliver",
    "deliver_batch",
    "writeback_batch",
    "prepare_batch",
    "effect_reports",
    "channel_tokens",
    "scan_daily",
)


def _called(node: ast.Call) -> str:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")


def _text(node: ast.AST, names: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    return None


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's names bound to strings (`NEW = "…"`, `OLD, NEW = "…", "…"`)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = [(target, node.value)]
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                pairs = list(zip(target.elts, node.value.elts, strict=False))
            for name, value in pairs:
                if isinstance(name, ast.Name) and (text := _text(value, {})) is not None:
                    found[name.id] = text
    return found


def task_paths(tree: ast.AST, names: dict[str, str]) -> set[str]:
    """Task paths enqueued, scheduled or written under `tree`."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _called(node) in ENQUEUERS and node.args and (path := _text(node.args[0], names)):
                found.add(path)
            if _called(node) not in READS:
                found |= {
                    path
                    for keyword in node.keywords
                    if keyword.arg in PATH_KEYWORDS and (path := _text(keyword.value, names))
                }
        elif isinstance(node, ast.Dict):
            found |= {
                path
                for key, value in zip(node.keys, node.values, strict=True)
                if key is not None and _text(key, {}) in PATH_KEYWORDS and (path := _text(value, names))
            }
    return found


def migration_paths(tree: ast.Module) -> set[str]:
    """What a migration's forward steps (`RunPython`'s first function) write into rows."""
    forwards = {
        node.args[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and _called(node) == "RunPython"
        and node.args
        and isinstance(node.args[0], ast.Name)
    }
    names = _constants(tree)
    return {
        path
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in forwards
        for path in task_paths(node, names)
    }


def product_paths() -> dict[str, str]:
    """{task path: the file that names it}."""
    found: dict[str, str] = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = (
                migration_paths(tree) if "migrations" in path.parts else task_paths(tree, _constants(tree))
            )
            found |= {name: str(path.relative_to(ROOT)) for name in names}
    return found


def test_it_finds_the_task_paths_of_every_kind():
    paths = product_paths()

    assert "deliveries.tasks.deliver_batch" in paths  # hand_out
    assert "backlog_bridge.tasks.process_events" in paths  # an intake's drain
    assert "deliveries.tasks.scan_daily" in paths  # a recurring job, and migration 0011's rows
    assert "backlog_bridge.tasks.scan_daily" not in paths  # what that migration reads, not writes


@pytest.mark.parametrize("path", sorted(product_paths()))
def test_it_imports_every_task_path_the_product_names(path):
    assert callable(import_string(path))


@pytest.mark.parametrize("name", DELIVERIES_TASKS)
def test_it_keeps_the_deliveries_tasks_at_their_queued_paths(name):
    assert callable(import_string(f"deliveries.tasks.{name}"))
