"""Imports follow the layers, lowest first: backlog_bridge → deliveries → linepush → console.

A lower app never imports a higher one; reactions that go up are signals or registries
filled in the higher app's AppConfig.ready.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("backlog_bridge", "deliveries", "linepush", "console")
# Until the core app holds them: Tenant (deliveries.models) and access scoping (console.access).
ALLOWED = {
    ("backlog_bridge", "deliveries.models"),
    ("backlog_bridge/admin.py", "console.access"),
    ("deliveries/admin.py", "console"),
    ("deliveries/tasks.py", "console"),
    ("linepush/admin.py", "console"),  # admin screens use the console's helpers
}


def _imports(path: Path) -> list[str]:
    """Every module an `import` / `from … import` names, at any depth of the file."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def _allowed(app: str, relative: str, module: str) -> bool:
    return any(
        (where in (app, relative)) and (module == allowed or module.startswith(allowed + "."))
        for where, allowed in ALLOWED
    )


def _upward_imports(app: str) -> list[str]:
    higher = LAYERS[LAYERS.index(app) + 1 :]
    found = []
    for path in sorted((ROOT / app).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if "/migrations/" in relative or relative.endswith("/apps.py"):
            continue  # apps.py: the AppConfig.ready that wires a higher app's reactions
        for module in _imports(path):
            if module.split(".")[0] in higher and not _allowed(app, relative, module):
                found.append(f"{relative}: {module}")
    return found


@pytest.mark.parametrize("app", LAYERS[:-1])
def test_it_imports_no_higher_layer(app):
    assert _upward_imports(app) == []
