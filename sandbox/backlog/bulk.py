"""The fake Backlog's bulk edits: several issues changed by one activity that lists them in
`content.link[]`. Mixed into BacklogSpace, whose lock and internals they use."""

from __future__ import annotations

from collections.abc import Mapping

from sandbox.backlog.records import HUMAN, Edit, Json, diff


class BulkEdits:
    def bulk_update(self, issue_keys: list[str], *, status: str, user: Json = HUMAN) -> None:
        """Backlog's bulk edit: one type-14 activity listing every issue in content.link[]."""
        with self._lock:
            issues = [self._issue_or_error(key) for key in issue_keys]
            if len({issue["projectId"] for issue in issues}) != 1:
                raise ValueError("bulk_update needs issues of exactly one project")
            project = self._project_of(issues[0])
            new_status = project.status_named(status)
            links = [self._bulk_change(project, issue, new_status, user) for issue in issues]
            content = {
                "tx_id": next(self._tx_ids),
                "comment": {"content": ""},
                "link": links,
                "changes": [{"field": "status", "new_value": str(new_status["id"]), "type": "standard"}],
            }
            self._record(project, 14, content, user)

    def bulk_update_dates(
        self, issue_keys: list[str], *, custom_fields: Mapping[str, object], user: Json = HUMAN
    ) -> None:
        """Backlog's bulk date update: the dates of several issues changed at once, recorded
        as one type-35 activity (`IssuesDatesUpdated` in nulab/backlog-js:src/types.ts).
        Backlog documents no content for it; the fake lists the issues in `content.link[]`
        as a bulk update (type 14) does."""
        with self._lock:
            issues = [self._issue_or_error(key) for key in issue_keys]
            if len({issue["projectId"] for issue in issues}) != 1:
                raise ValueError("bulk_update_dates needs issues of exactly one project")
            project = self._project_of(issues[0])
            values = self._values_by_name(project, custom_fields)
            links = []
            for issue in issues:
                changes = diff(project, issue, Edit(field_values=values))
                self._apply(project, issue, changes, user)
                record = self._store_comment(issue, None, changes, user)
                links.append(bulk_link(issue, record))
            entries = [{k: v for k, v in c.webhook_entry().items() if k != "old_value"} for c in changes]
            content = {
                "tx_id": next(self._tx_ids),
                "comment": {"content": ""},
                "link": links,
                "changes": entries,
            }
            self._record(project, 35, content, user)


def bulk_link(issue: Json, record: Json) -> Json:
    """One issue of a bulk activity's `content.link[]`."""
    return {
        "id": issue["id"],
        "key_id": issue["keyId"],
        "title": issue["summary"],
        "comment": {"id": record["id"], "content": ""},
    }
