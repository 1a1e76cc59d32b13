"""The shape of a Backlog activity (webhook body or catch-up item) automedia accepts.

Every identifier that later goes into a Backlog URL is checked here, at the receiver
and again before a stored event is processed.
"""

from __future__ import annotations

from backlog_bridge.identifiers import id_valid, issue_key_valid, project_key_valid
from backlog_bridge.models import (
    HANDLED_TYPES,
    TYPE_BULK_UPDATED,
    TYPE_COMMENTED,
    TYPE_DATES_UPDATED,
    BacklogEvent,
)
from core.models import Tenant

ISSUE_KEY_MAX = BacklogEvent._meta.get_field("issue_key").max_length


class PayloadError(ValueError):
    """A webhook body automedia cannot accept (answered with 400 and this reason)."""


def webhook_validate(*, tenant: Tenant, payload: object) -> dict:
    if not isinstance(payload, dict):
        raise PayloadError("body must be a JSON object (one Backlog activity)")
    if not id_valid(payload.get("id")):
        raise PayloadError("activity `id` (positive integer) is missing")
    if not _small_int(payload.get("type")):
        raise PayloadError("activity `type` (integer) is missing")
    project = payload.get("project")
    project_key = project.get("projectKey") if isinstance(project, dict) else None
    if project_key != tenant.backlog_project_key:
        raise PayloadError(
            f"project key {value_shown(project_key)} does not belong to tenant {tenant.slug!r}"
        )
    if payload["type"] in HANDLED_TYPES:
        handled_activity_check(tenant=tenant, activity=payload)
    return payload


def handled_activity_check(*, tenant: Tenant, activity: dict) -> None:
    """What the handlers read has the shape they expect (`content` an object, `changes` a
    list of objects, `createdUser` an object) and every identifier its format; raises
    PayloadError. Run at the receiver and again before a stored event is processed: a
    type automedia does not handle is stored with whatever `content` it has and never read."""
    content = activity.get("content")
    if not isinstance(content, dict):
        raise PayloadError("activity `content` (object) is missing")
    changes = content.get("changes", [])
    if not isinstance(changes, list) or not all(_change_valid(change) for change in changes):
        raise PayloadError("`content.changes` must be a list of objects with a string `field`")
    user = activity.get("createdUser")
    if user is not None and not (isinstance(user, dict) and (user.get("id") is None or id_valid(user["id"]))):
        raise PayloadError("`createdUser` must be an object with an integer `id`")
    activity_identifiers_check(tenant=tenant, activity=activity)


def _change_valid(change: object) -> bool:
    return isinstance(change, dict) and isinstance(change.get("field"), str)


def activity_identifiers_check(*, tenant: Tenant, activity: dict) -> None:
    """Every identifier of a handled activity that goes into a Backlog URL has its format,
    so no payload can steer a request elsewhere (`key_id: "1/../OTHER-1"`); raises
    PayloadError. Run at the receiver and again before a stored event is processed."""
    if not project_key_valid(tenant.backlog_project_key):
        raise PayloadError(
            f"tenant project key {value_shown(tenant.backlog_project_key)} is not a Backlog project key"
        )
    content = activity["content"]
    if names_many(activity):
        links = content.get("link")
        if not isinstance(links, list) or not all(isinstance(link, dict) for link in links):
            raise PayloadError("`content.link` (list of objects) is missing")
        for link in links:
            _issue_identifiers_check(tenant, link, "content.link[]")
        return
    _issue_identifiers_check(tenant, content, "content")
    if activity["type"] == TYPE_COMMENTED and not id_valid(_comment_id(content)):
        raise PayloadError(
            f"`content.comment.id` must be a positive integer, not {value_shown(_comment_id(content))}"
        )


def names_many(activity: dict) -> bool:
    """Whether the activity names its issues in `content.link[]` (a bulk update, type 14).

    A bulk date update (type 35) is read the same way when it has `content.link`; Backlog
    documents no content for it, so one naming a single issue (`content.key_id`) is read
    like an issue update."""
    if activity["type"] == TYPE_BULK_UPDATED:
        return True
    content = activity.get("content")
    return activity["type"] == TYPE_DATES_UPDATED and isinstance(content, dict) and "link" in content


def _issue_identifiers_check(tenant: Tenant, content: dict, where: str) -> None:
    if not id_valid(content.get("key_id")):
        raise PayloadError(
            f"`{where}.key_id` must be a positive integer, not {value_shown(content.get('key_id'))}"
        )
    if "id" in content and not id_valid(content["id"]):
        raise PayloadError(f"`{where}.id` must be a positive integer, not {value_shown(content['id'])}")
    issue_key = issue_key_of(tenant, content)
    if not issue_key_valid(issue_key) or len(issue_key) > ISSUE_KEY_MAX:
        raise PayloadError(f"issue key {value_shown(issue_key)} is not valid")


def _comment_id(content: dict) -> object:
    comment = content.get("comment")
    return comment.get("id") if isinstance(comment, dict) else None


def _small_int(value: object) -> bool:
    # The type column is a PositiveSmallIntegerField.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 32767


def value_shown(value: object) -> str:
    """A payload value in an error answer: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def activity_handled(activity: dict) -> bool:
    """Whether automedia acts on this activity type (others are stored as ignored)."""
    return activity["type"] in HANDLED_TYPES


def issue_key_of(tenant: Tenant, content: object) -> str:
    """The issue key a payload names (a hint: the handlers act on the key Backlog answers)."""
    key_id = content.get("key_id") if isinstance(content, dict) else None
    return f"{tenant.backlog_project_key}-{key_id}" if key_id is not None else ""
