"""The fake Backlog's project settings over the API: Add Status, Add Custom Field, and the
project's webhooks (Get Webhook List, Add Webhook), with Backlog's documented parameters and
roles.

- https://developer.nulab.com/docs/backlog/api/2/add-status/: `name` and `color` (one of ten),
  at most 8 statuses beyond the 4 default ones;
- https://developer.nulab.com/docs/backlog/api/2/add-custom-field/: `typeId` and `name` required
  (the fake implements the text types 1 and 2, the only ones automedia adds);
- https://developer.nulab.com/docs/backlog/api/2/add-webhook/ and get-list-of-webhooks:
  `name`, `description`, `hookUrl`, `allEvent`, `activityTypeIds[]`.

Each takes the Administrator or Project Administrator role; the fake knows only the space role
of the API key's user (`BacklogSpace.api_user_role`) and answers any other 403, code 5
(https://developer.nulab.com/docs/backlog/error-response/).
"""

from __future__ import annotations

from typing import Any

from sandbox.backlog.records import BOT, ApiError, Json, iso, utc_now

ADMINISTRATOR = 1
STATUS_COLORS = frozenset(
    "#ea2c00 #e87758 #e07b9a #868cb7 #3b9dbd #4caf93 #b0be3c #eda62a #f42858 #393939".split()
)
MAX_CUSTOM_STATUSES = 8
DEFAULT_STATUS_COUNT = 4
TEXT_TYPES = frozenset({1, 2})
_STATUS_PARAMS = frozenset({"name", "color"})
_FIELD_PARAMS = frozenset({"typeId", "name", "applicableIssueTypes[]", "description", "required"})
_FIELD_UNMODELLED = frozenset(
    "min max initialValue unit initialValueType initialDate initialShift items[] allowInput allowAddItem".split()
)
_WEBHOOK_PARAMS = frozenset({"name", "description", "hookUrl", "allEvent", "activityTypeIds[]"})

Params = dict[str, list[str]]


def webhook_json(
    hook_id: int,
    url: str,
    *,
    name: str = "sandbox",
    description: str = "",
    all_event: bool = True,
    types: list[int] | None = None,
) -> Json:
    now = iso(utc_now())
    return {
        "id": hook_id,
        "name": name,
        "description": description,
        "hookUrl": url,
        "allEvent": all_event,
        "activityTypeIds": list(types or []),
        "createdUser": dict(BOT),
        "created": now,
        "updatedUser": dict(BOT),
        "updated": now,
    }


class ProjectSettings:
    """The routes' handlers; each is called with the space's lock held."""

    def __init__(self, fake, project_of) -> None:
        self._fake = fake  # the BacklogSpace
        self._project_of = project_of  # id or key -> Project, 404 otherwise

    def routes(self, project: str) -> list[tuple[str, str, Any]]:
        return [
            ("POST", project + "/statuses", self.add_status),
            ("POST", project + "/customFields", self.add_custom_field),
            ("GET", project + "/webhooks", self.webhooks),
            ("POST", project + "/webhooks", self.add_webhook),
        ]

    def _admin(self) -> None:
        if self._fake.api_user_role != ADMINISTRATOR:
            raise ApiError(403, "Unauthorized operation.", 5)

    def add_status(self, params: Params, project: str) -> tuple[int, Any]:
        _only(params, _STATUS_PARAMS)
        found = self._project_of(project)
        self._admin()
        name, color = _required(params, "name"), _required(params, "color")
        if color not in STATUS_COLORS:
            raise ApiError(400, f"'color' must be one of {', '.join(sorted(STATUS_COLORS))}.")
        if any(s["name"] == name for s in found.statuses):
            raise ApiError(400, f"The status '{name}' already exists.")
        if len(found.statuses) >= DEFAULT_STATUS_COUNT + MAX_CUSTOM_STATUSES:
            raise ApiError(400, "No more statuses can be added to this project.", 9)
        status_id = max((s["id"] for s in self._fake._projects_by_id_statuses()), default=0) + 1
        order = max((s["displayOrder"] for s in found.statuses), default=0) + 1000
        status = {"id": status_id, "projectId": found.id, "name": name, "color": color, "displayOrder": order}
        found.statuses.append(status)
        return 200, status

    def add_custom_field(self, params: Params, project: str) -> tuple[int, Any]:
        for name in params:
            if name in _FIELD_UNMODELLED:
                raise ApiError(400, f"The fake Backlog does not implement the parameter '{name}'.")
        _only(params, _FIELD_PARAMS)
        found = self._project_of(project)
        self._admin()
        type_id, name = _int(_required(params, "typeId"), "typeId"), _required(params, "name")
        if not 1 <= type_id <= 8:
            raise ApiError(400, "'typeId' must be 1 to 8.")
        if type_id not in TEXT_TYPES:
            raise ApiError(400, f"The fake Backlog does not implement custom fields of typeId {type_id}.")
        if any(f["name"] == name for f in found.custom_fields):
            raise ApiError(400, f"The custom field '{name}' already exists.")
        field_id = max((f["id"] for f in self._fake._all_custom_fields()), default=100) + 1
        definition = {
            "id": field_id,
            "projectId": found.id,
            "typeId": type_id,
            "version": None,
            "name": name,
            "description": (params.get("description") or [""])[0],
            "required": (params.get("required") or ["false"])[0] == "true",
            "useIssueType": False,
            "applicableIssueTypes": [],
            "displayOrder": len(found.custom_fields),
        }
        found.custom_fields.append(definition)
        for issue in found.issues.values():  # every issue gets the field, empty
            issue["customFields"].append(
                {"id": field_id, "fieldTypeId": type_id, "name": name, "value": None}
            )
        return 200, definition

    def webhooks(self, params: Params, project: str) -> tuple[int, Any]:
        _only(params, frozenset())
        found = self._project_of(project)
        self._admin()
        return 200, found.webhooks

    def add_webhook(self, params: Params, project: str) -> tuple[int, Any]:
        _only(params, _WEBHOOK_PARAMS)
        found = self._project_of(project)
        self._admin()
        url = (params.get("hookUrl") or [""])[0]
        if not url.startswith(("http://", "https://")):
            raise ApiError(400, "'hookUrl' must be a URL.")
        all_event = (params.get("allEvent") or ["false"])[0] == "true"
        types = sorted({_int(raw, "activityTypeIds[]") for raw in params.get("activityTypeIds[]", [])})
        hook = webhook_json(
            next(self._fake._webhook_ids),
            url,
            name=_required(params, "name"),
            description=(params.get("description") or [""])[0],
            all_event=all_event,
            types=types,
        )
        found.webhooks.append(hook)
        return 200, hook


def _only(params: Params, allowed: frozenset[str]) -> None:
    for name in params:
        if name not in allowed:
            raise ApiError(400, f"Undefined parameter '{name}'.")


def _required(params: Params, name: str) -> str:
    values = params.get(name)
    if not values or not values[0].strip():
        raise ApiError(400, f"'{name}' is required.")
    return values[0]


def _int(raw: str, name: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"'{name}' must be a number.") from None
