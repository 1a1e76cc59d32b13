"""Survey answers: the text of a LINE message (`message`) or of its edit (`messageEdited`)
run through the tenant's LineSurveyRule rows, changing the sender's tags.

An answer is the latest version of its message by LINE's timestamp: LINE may deliver
edits, and the message itself, in any order ("the event with the largest timestamp
represents the latest edit state", MessageEditedEvent in LINE's SDKs). A later version
first takes back what the version before it changed (the tags it added, the next-delivery
wish it set), then applies the rules to its own text; an earlier one changes nothing.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from core.models import Tenant
from line.models import LineAnswer, LineContact, LineSurveyRule


def answer_apply(*, tenant: Tenant, user_id: str, message: dict, timestamp: int) -> str:
    """Apply the survey rules to this version of a text message; returns what changed."""
    text = message.get("text") or ""
    rules = [r for r in LineSurveyRule.objects.filter(tenant=tenant, is_active=True) if r.matches(text)]
    message_id = message.get("id")
    if not isinstance(message_id, str) or not message_id:
        # webhook.yml requires `id`; without one no later version can be told apart.
        return _apply(tenant, user_id, rules, None) if rules else "no survey rule matched"
    with transaction.atomic():
        earlier = LineAnswer.objects.select_for_update().filter(tenant=tenant, message_id=message_id).first()
        if earlier is not None and earlier.timestamp >= timestamp:
            return f"message {message_id}: a later version ({earlier.timestamp}) is the answer"
        if earlier is None and not rules:
            LineAnswer.objects.create(
                tenant=tenant, message_id=message_id, user_id=user_id, timestamp=timestamp
            )
            return "no survey rule matched"
        return _apply(tenant, user_id, rules, earlier, message_id=message_id, timestamp=timestamp, text=text)


def _apply(tenant, user_id, rules, earlier, **version) -> str:
    with transaction.atomic():
        contact, _ = LineContact.objects.select_for_update().get_or_create(tenant=tenant, user_id=user_id)
        before = list(contact.tags or [])
        wished = contact.wants_next_delivery
        if earlier is not None:  # take back what the earlier version changed
            before = [t for t in before if t not in earlier.added_tags]
            wished = wished and not earlier.set_next_delivery
        tags = _apply_rules(before, rules)
        wants = wished or any(r.next_delivery for r in rules)
        LineContact.objects.filter(pk=contact.pk).update(
            tags=tags, wants_next_delivery=wants, updated_at=timezone.now()
        )
        if version:
            LineAnswer.objects.update_or_create(
                tenant=tenant,
                message_id=version["message_id"],
                defaults={
                    "user_id": user_id,
                    "timestamp": version["timestamp"],
                    "text": version["text"],
                    "added_tags": [t for t in tags if t not in before],
                    "set_next_delivery": wants and not wished,
                },
            )
    names = ", ".join(r.name for r in rules) or "none"
    return f"rules {names} → tags {tags}"


def _apply_rules(tags: list[str], rules: list[LineSurveyRule]) -> list[str]:
    current = list(tags)
    for rule in rules:
        current = [t for t in current if t not in rule.remove_tags]
        current += [t for t in rule.add_tags if t not in current]
    return current
