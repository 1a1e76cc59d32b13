"""``python -m sandbox``: the `sandbox` process of `make run` (see sandbox/demo.py)."""

from __future__ import annotations

import os

import django

# As manage.py does; the demo wiring reads automedia's settings and tenants.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "automedia_site.settings")
django.setup()

from sandbox.demo import main  # noqa: E402 - needs the apps loaded

main()
