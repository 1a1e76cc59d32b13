"""The fakes stay small and run as `python -m sandbox`. That the product never imports
them is an import-linter contract (pyproject.toml, tests/test_architecture.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_SANDBOX_LINES = 500


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
