"""What the Backlog adapter tells the layers above it, which it does not import (the
managers' dashboard, `console`, records these in its AppConfig.ready)."""

from __future__ import annotations

from django.dispatch import Signal

# A safety-net scan (`scan_backlog` or the daily job) finished. Keywords: results (a
# backlog_bridge.scan.ScanResult per tenant), totals, dry_run.
scan_finished = Signal()
