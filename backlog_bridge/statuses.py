"""A Backlog project's statuses by name (seed 001): automedia's states are status names."""

from __future__ import annotations

from backlog_bridge.client import BacklogClient


class BacklogConfigError(Exception):
    """The Backlog project lacks something automedia needs (a status, a field)."""


def status_id_require(*, client: BacklogClient, project_key: str, name: str) -> int:
    """The id of the status called `name`; BacklogConfigError when the project has none."""
    status_id = client.status_id(project_key, name)
    if status_id is None:
        raise BacklogConfigError(f"プロジェクト {project_key} に状態「{name}」がありません")
    return status_id


def status_name_of(*, client: BacklogClient, project_key: str, status_id: int) -> str:
    """The name of a status by id ("" when the project no longer has it)."""
    return next((s["name"] for s in client.statuses(project_key) if s["id"] == status_id), "")
