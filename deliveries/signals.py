"""What the delivery lifecycle tells the layers above it, which deliveries does not import
(the managers' dashboard, `console`, records these in its AppConfig.ready)."""

from __future__ import annotations

from django.dispatch import Signal

# A delivery task finished one claimed schedule. Keywords: tenant_id, task_id, result
# (`delivery_run`'s result, or "error" when it raised).
delivery_finished = Signal()
