"""A clone runs on its own: nothing outside the repository is read, cited or needed.

A user's clone has nothing beside it, so a path into the parent directory's `shared/`
folder (where the project's research notes once lived) is a test, fixture or target that
fails for them, or a citation they cannot follow. Markdown documentation may mention it
(it says where the original specification lives for the team).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from django.conf import settings

# Spelled in parts so that this file does not match itself.
NEEDLES = (b"../" + b"shared", b"shared" + b"/reference/", b"shared" + b"/specs/")


def mentions_outside(path: Path) -> bool:
    text = path.read_bytes()
    return any(needle in text for needle in NEEDLES)


def tracked_files(root: Path) -> list[Path]:
    """The files git tracks, or every file below `root` but the virtualenv when it is not a clone."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=30
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return [
            p for p in root.rglob("*") if p.is_file() and ".venv" not in p.parts and ".git" not in p.parts
        ]
    return [root / name for name in out.decode().split("\0") if name]


def test_it_mentions_no_path_outside_the_clone_except_in_markdown():
    root = Path(settings.BASE_DIR)
    offenders = [
        str(path.relative_to(root))
        for path in tracked_files(root)
        if path.suffix != ".md" and path.is_file() and mentions_outside(path)
    ]

    assert offenders == []


def test_it_finds_a_mention_where_there_is_one(tmp_path):
    (tmp_path / "module.py").write_bytes(b'"""See ' + NEEDLES[0] + b'/reference/line.md."""\n')
    (tmp_path / "sandbox.py").write_bytes(b"# follows " + NEEDLES[2] + b"line-openapi/webhook.yml\n")
    (tmp_path / "client.py").write_bytes(b"def shared_client(): ...  # shared templates\n")

    assert sorted(p.name for p in tracked_files(tmp_path) if mentions_outside(p)) == [
        "module.py",
        "sandbox.py",
    ]
