"""`make chaos`: automedia's real processes against the sandbox fakes under faults (kill -9,
Backlog outages, LINE failing and hanging), one line of figures per campaign.

accounting.py is the arithmetic (tested in tests/sandbox/test_chaos_accounting.py),
campaigns.py the campaigns and their run, __main__.py the command line
(`.venv/bin/python -m bench.chaos --help`).
"""
