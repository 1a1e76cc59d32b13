"""The audit trail of what people do in the admin: Django's own LogEntry.

Using LogEntry means every action also appears in the object's 履歴 page and in
the admin's 最近の操作, beside the changes Django logs itself (list edits).
"""

from __future__ import annotations

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model


def action_record(*, user, obj: Model, message: str) -> LogEntry:
    """Who did what to `obj`, now; `message` is shown as is (Japanese)."""
    return LogEntry.objects.create(
        user_id=user.pk,
        content_type=ContentType.objects.get_for_model(obj, for_concrete_model=True),
        object_id=str(obj.pk),
        object_repr=str(obj)[:200],
        action_flag=CHANGE,
        change_message=message,
    )
