"""Read a Backlog issue description (and its custom fields) into a ``ParsedTask``.

No input makes this raise: every problem is one Japanese line in ``ParsedTask.errors``.
"""

from __future__ import annotations

from backlog_bridge.body.content import content_attachments, content_variables
from backlog_bridge.body.meta import (
    meta_audience,
    meta_channel,
    meta_contact_group,
    meta_items,
    meta_template,
)
from backlog_bridge.body.publish_at import publish_at_read, publish_field
from backlog_bridge.body.sections import (
    KEY_AUDIENCE,
    KEY_CONTACT_GROUP,
    KEY_PUBLISH_AT,
    KEY_TEMPLATE,
    SECTION_ATTACHMENTS,
    SECTION_META,
    SECTION_VARIABLES,
    find_section,
    lines_of,
    missing_meta_message,
    split_sections,
)
from backlog_bridge.body.task import ParsedTask
from backlog_bridge.body.tiktok import meta_tiktok


def parse_issue(*, description: str | None, custom_fields: list[dict] | None = None) -> ParsedTask:
    errors: list[str] = []
    sections = split_sections(lines_of(description))
    meta = find_section(sections, SECTION_META, errors)
    if meta is None:
        errors.append(missing_meta_message(sections))
    items, has_meta = meta_items(meta, errors), meta is not None
    task = ParsedTask(errors=errors)
    task.channel = meta_channel(items, has_meta, errors)
    task.publish_at, task.publish_at_source = publish_at_read(
        items.get(KEY_PUBLISH_AT), publish_field(custom_fields), has_meta, errors
    )
    task.audience = meta_audience(items.get(KEY_AUDIENCE), task.channel, errors)
    task.template = meta_template(items.get(KEY_TEMPLATE), has_meta, errors)
    task.contact_group = meta_contact_group(items.get(KEY_CONTACT_GROUP), errors)
    task.tiktok = meta_tiktok(items, task.channel, errors)
    task.variables = content_variables(find_section(sections, SECTION_VARIABLES, errors), errors)
    task.attachments = content_attachments(find_section(sections, SECTION_ATTACHMENTS, errors), errors)
    return task
