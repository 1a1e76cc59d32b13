"""``python -m sandbox.line --help``: the stand-alone fake LINE."""

from sandbox.line.cli import main

main()
