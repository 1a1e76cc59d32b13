"""What the Backlog adapter finds that the layers above act on without being imported here."""

from __future__ import annotations

from django.dispatch import Signal

# The catch-up's first run for a tenant listed a page of its project's issues (Backlog's
# issue JSON, up to 100): they exist already, and no activity after the cursor will name
# them. Keywords: tenant, client (BacklogClient), issues (list of dicts). The delivery
# lifecycle registers each as an issue-created webhook would; receivers return how many.
issues_listed = Signal()
