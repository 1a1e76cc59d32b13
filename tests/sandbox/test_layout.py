"""The fakes sit beside the product: the product never imports them, and they stay small.

The sandbox may import the product (its demo wiring reads the tenants); the other way
round, a fake could end up serving production traffic.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("automedia_site", "core", "backlog_bridge", "deliveries", "linepush", "console")
# Where the fakes live now, and where they lived inside the product before.
FORBIDDEN = ("sandbox", "tests", "sandbox")
MAX_SANDBOX_LINES = 500


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_bytes(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def product_modules() -> list[Path]:
    return [
        path for package in PRODUCT if (ROOT / package).is_dir() for path in (ROOT / package).rglob("*.py")
    ]


def test_it_finds_the_product_modules():
    assert len(product_modules()) > 50


def test_it_keeps_the_product_free_of_sandbox_and_test_imports():
    offenders = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in product_modules()
        for name in imported_modules(path)
        if any(name == forbidden or name.startswith(forbidden + ".") for forbidden in FORBIDDEN)
    )

    assert offenders == []


def test_it_keeps_every_sandbox_module_under_500_lines():
    sizes = {path: len(path.read_text().splitlines()) for path in (ROOT / "sandbox").rglob("*.py")}

    assert sizes
    assert {str(path.relative_to(ROOT)): n for path, n in sizes.items() if n > MAX_SANDBOX_LINES} == {}


def test_it_runs_the_sandbox_of_make_run_as_a_module():
    procfile = (ROOT / "Procfile").read_text().splitlines()
    env = {**os.environ, "DEBUG": "1"}
    env.pop("DJANGO_SETTINGS_MODULE", None)

    done = subprocess.run(
        [sys.executable, "-m", "sandbox", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert "sandbox: exec python -m sandbox" in procfile
    assert done.returncode == 0, done.stderr
    assert "--backlog-url" in done.stdout
    assert "--public-url" in done.stdout
