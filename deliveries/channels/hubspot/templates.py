"""HubSpot's template rules: its shapes are `KINDS` below, each with its check.

Note bodies up to 65,536 characters (https://developers.hubspot.com/docs/api-reference/crm-notes-v3/guide).
"""

from __future__ import annotations

from deliveries.channels.placeholders import with_samples
from deliveries.channels.post_templates import (
    SAMPLE_URL,
    Kinds,
    Problems,
    kinds_problems,
    text_field,
)

NOTE_BODY_MAX = 65_536

HTML_FIELDS = ("body",)  # a CRM note's body is HTML


def validate(content: object) -> Problems:
    """Every problem of a filled template (or of one with samples), each naming its field."""
    return kinds_problems("hubspot", KINDS, content)


def template_problems(content: object) -> Problems:
    """What is wrong with a template file being imported (placeholders stand for samples)."""
    return validate(with_samples(content, url=SAMPLE_URL))


def describe_text(content: dict) -> str:
    return content.get("body", "") if content.get("type") == "note" else f"email_id {content.get('email_id')}"


def _hs_note(content: dict) -> Problems:
    return text_field(content, "body", NOTE_BODY_MAX)


def _hs_email(content: dict) -> Problems:
    email_id = content.get("email_id")
    problems = []
    if isinstance(email_id, bool) or not (isinstance(email_id, int) and email_id > 0):
        problems.append(
            f"email_id は HubSpot のメール ID（正の整数）で指定してください（今: {email_id!r}）。"
        )
    props = content.get("custom_properties", {})
    if not isinstance(props, dict) or not all(isinstance(v, str | int | float) for v in props.values()):
        problems.append("custom_properties は {名前: 値} のオブジェクト（値は文字列か数値）にしてください。")
    return problems


KINDS: Kinds = {
    "note": ({"body"}, _hs_note),
    "email": ({"email_id", "custom_properties"}, _hs_email),
}
