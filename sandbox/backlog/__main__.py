"""``python -m sandbox.backlog --help``: the stand-alone fake Backlog."""

from sandbox.backlog.cli import main

main()
