"""The fake channel's template rules: `{"type": "note", "text"}`, at most 100 characters."""

from __future__ import annotations

from deliveries.channels.placeholders import with_samples
from deliveries.channels.post_templates import SAMPLE_URL, Problems, kinds_problems, text_field

KIND = "fake"
KINDS = {"note": ({"text"}, lambda content: text_field(content, "text", 100))}
HTML_FIELDS = ()


def validate(content: object) -> Problems:
    return kinds_problems(KIND, KINDS, content)


def template_problems(content: object) -> Problems:
    return validate(with_samples(content, url=SAMPLE_URL))


def describe_text(content: dict) -> str:
    return str(content.get("text", ""))
