"""Status name → id: the one function, and its error when the project lacks the status."""

from __future__ import annotations

import pytest

from backlog_bridge.statuses import BacklogConfigError, status_id_require, status_name_of


class Statuses:
    """A client's two status calls, nothing else."""

    def statuses(self, project_key: str) -> list[dict]:
        return [{"id": 1, "name": "処理中"}, {"id": 7, "name": "automedia承認"}]

    def status_id(self, project_key: str, name: str) -> int | None:
        return next((s["id"] for s in self.statuses(project_key) if s["name"] == name), None)


def test_it_resolves_a_status_by_name():
    assert status_id_require(client=Statuses(), project_key="ACME", name="automedia承認") == 7


def test_it_names_the_project_and_status_that_are_missing():
    with pytest.raises(BacklogConfigError, match="プロジェクト ACME に状態「automedia配信済」がありません"):
        status_id_require(client=Statuses(), project_key="ACME", name="automedia配信済")


def test_it_names_a_status_by_id_or_gives_empty_text():
    assert status_name_of(client=Statuses(), project_key="ACME", status_id=1) == "処理中"
    assert status_name_of(client=Statuses(), project_key="ACME", status_id=99) == ""
