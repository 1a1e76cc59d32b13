"""The layers' direction, as far as core and console go: core imports no app, no app
imports the composition root (automedia_site), and nothing below console imports it
(console records what the lower layers announce through their signals)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("core", "backlog_bridge", "deliveries", "linepush", "console")


def imports_of(package: str) -> set[tuple[str, str]]:
    """(module file, imported top-level package) for every import, also inside functions."""
    found = set()
    for path in (ROOT / package).rglob("*.py"):
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {(where, alias.name.split(".")[0]) for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add((where, node.module.split(".")[0]))
    return found


def test_it_keeps_core_free_of_the_apps_above_it():
    above = {"backlog_bridge", "deliveries", "linepush", "console", "automedia_site"}

    assert sorted((where, name) for where, name in imports_of("core") if name in above) == []


def test_it_keeps_console_out_of_the_layers_below_it():
    below = ("core", "backlog_bridge", "deliveries", "linepush")

    assert sorted(i for package in below for i in imports_of(package) if i[1] == "console") == []


def test_it_keeps_the_apps_off_the_composition_root():
    assert sorted(i for package in APPS for i in imports_of(package) if i[1] == "automedia_site") == []
