"""The Backlog side of a tenant's connection: the check (the key's user, the project, what
the project still lacks) and the setup that adds what it lacks (`manage.py setup_tenant`).

Adding statuses, custom fields and webhooks takes the Administrator or Project Administrator
role (https://developer.nulab.com/docs/backlog/api/2/add-status/,
https://developer.nulab.com/docs/backlog/api/2/add-custom-field/,
https://developer.nulab.com/docs/backlog/api/2/add-webhook/). Only the space role is read from
the key's user (`roleType` of https://developer.nulab.com/docs/backlog/api/2/get-own-user/,
1 = Administrator); any other role gets the manual steps instead of a setup that stops halfway.
"""

from __future__ import annotations

from dataclasses import dataclass

from backlog_bridge.client import (
    BacklogClient,
    BacklogError,
    BacklogHostRefused,
    InvalidIdentifier,
)
from backlog_bridge.refusals import denied_fix
from core.connections import CheckResult

ADMINISTRATOR = 1
# Add Status takes one of ten colours (https://developer.nulab.com/docs/backlog/api/2/add-status/).
STATUS_COLOR = "#868cb7"
TEXT_FIELD = 1  # typeId 1: 文字列 (add-custom-field)
WEBHOOK_NAME = "automedia"


@dataclass(frozen=True)
class ProjectNeeds:
    """What automedia needs of a project: its statuses and text custom fields by name, and
    the webhook to `webhook_url` for `activity_types`."""

    statuses: tuple[str, ...]
    fields: tuple[str, ...]
    webhook_url: str
    activity_types: tuple[int, ...]
    command: str  # the command that adds what lacks, as a person types it


@dataclass(frozen=True)
class ProjectState:
    user: dict
    statuses: tuple[str, ...]  # missing
    fields: tuple[str, ...]  # missing
    webhook: bool | None  # registered; None: the key's role may not read webhooks

    @property
    def admin(self) -> bool:
        return self.user.get("roleType") == ADMINISTRATOR


class Refused(Exception):
    """The connection does not work: the message names what and the fix."""


def backlog_client(tenant) -> BacklogClient:
    """A client that records nothing on the tenant: a check's 401 is the check's answer."""
    return BacklogClient(base_url=tenant.backlog_base_url, api_key=tenant.backlog_api_key)


def backlog_check(*, tenant, needs: ProjectNeeds) -> CheckResult:
    try:
        with backlog_client(tenant) as client:
            state = project_state(client, tenant, needs)
    except Refused as exc:
        return CheckResult("backlog", ok=False, problem=str(exc))
    user = f"API キーのユーザー: {state.user.get('name')}（{'管理者' if state.admin else '管理者ではありません'}）"
    return CheckResult("backlog", ok=True, lacks=_lacks(state, needs), facts=(user,))


def project_state(client: BacklogClient, tenant, needs: ProjectNeeds) -> ProjectState:
    key = tenant.backlog_project_key
    user = _call(tenant, lambda: client.myself(fresh=True), what="user")
    _call(tenant, lambda: client.project(key), what="project")
    statuses = {s.get("name") for s in _call(tenant, lambda: client.project_list(key, "statuses"))}
    fields = {f.get("name") for f in _call(tenant, lambda: client.project_list(key, "customFields"))}
    try:
        hooks = client.project_list(key, "webhooks")
    except BacklogError as exc:
        if exc.status == 401:
            raise Refused(_problem(tenant, exc, "project")) from exc
        webhook = None  # reading webhooks takes the roles that add them (403)
    else:
        webhook = any(_serves(hook, needs) for hook in hooks)
    return ProjectState(
        user=user,
        statuses=tuple(s for s in needs.statuses if s not in statuses),
        fields=tuple(f for f in needs.fields if f not in fields),
        webhook=webhook,
    )


def _serves(hook: dict, needs: ProjectNeeds) -> bool:
    if hook.get("hookUrl") != needs.webhook_url:
        return False
    return bool(hook.get("allEvent")) or set(needs.activity_types) <= set(hook.get("activityTypeIds") or [])


def _lacks(state: ProjectState, needs: ProjectNeeds) -> tuple[str, ...]:
    lacks = [f"状態「{s}」（{needs.command}）" for s in state.statuses]
    lacks += [f"カスタム属性「{f}」（文字列、{needs.command}）" for f in state.fields]
    if state.webhook is False:
        lacks.append(f"automedia への Webhook（{needs.command}）")
    if state.webhook is None:
        lacks.append("Webhook は確認できません（API キーのユーザーに一覧を読む権限がありません）")
    return tuple(lacks)


def _call(tenant, fetch, *, what: str = "project"):
    try:
        return fetch()
    except BacklogError as exc:
        raise Refused(_problem(tenant, exc, what)) from exc


def _problem(tenant, exc: BacklogError, what: str) -> str:
    url, key = tenant.backlog_base_url, tenant.backlog_project_key
    if isinstance(exc, BacklogHostRefused):
        return f"Backlog URL「{url}」には API キーを送りません: {exc.message}"
    if isinstance(exc, InvalidIdentifier):
        return f"プロジェクトキー「{key}」は使えません。英大文字・数字・_ だけのキー（例: ACME）を入れてください。"
    if exc.status == 0:
        return f"Backlog URL「{url}」に接続できません。スペースの URL（例: https://acme.backlog.jp）を確かめてください。"
    if exc.status == 401:
        return (
            "Backlog が API キーを受け付けません（HTTP 401）。Backlog の個人設定 → API で発行したキーを"
            " --backlog-api-key（管理画面では Backlog APIキー）に入れてください。"
        )
    if what == "user" and exc.status not in (403, 429) and exc.status < 500:
        # Not Backlog's API answering (a 404 page, a redirect, a page that is not JSON).
        return f"「{url}」は Backlog スペースの API に答えません（HTTP {exc.status}）。スペースの URL を確かめてください。"
    if exc.status == 404:
        return (
            f"プロジェクトキー「{key}」のプロジェクトがないか、API キーのユーザーが参加していません。"
            " Backlog のプロジェクト設定でキーを確かめ、--backlog-project（管理画面では Backlog プロジェクトキー）に入れてください。"
        )
    if exc.status == 403:
        return denied_fix(exc.status, exc.message)
    return f"Backlog を確認できませんでした: {exc}（しばらくしてから manage.py check_connections で確かめてください）"


# -- setup ------------------------------------------------------------------------------


def backlog_setup(*, tenant, needs: ProjectNeeds, dry_run: bool) -> list[str]:
    """Add what the project lacks, or say what would be added (`dry_run`), or the manual
    steps when the key's user is no Administrator. Raises Refused when the check fails."""
    with backlog_client(tenant) as client:
        state = project_state(client, tenant, needs)
        steps = _steps(state, needs)
        if not steps:
            return ["Backlog: 変更はありません（状態・カスタム属性・Webhook はそろっています）。"]
        if not state.admin:
            return _manual(tenant, state, steps)
        if dry_run:
            return [f"Backlog: 追加します: {label}" for label, _, _ in steps]
        return [_apply(client, tenant, step) for step in steps]


def _steps(state: ProjectState, needs: ProjectNeeds) -> list[tuple[str, str, dict]]:
    steps = [(f"状態「{s}」", "statuses", {"name": s, "color": STATUS_COLOR}) for s in state.statuses]
    steps += [
        (f"カスタム属性「{f}」（文字列）", "customFields", {"typeId": TEXT_FIELD, "name": f})
        for f in state.fields
    ]
    if state.webhook is not True:  # unknown is added too: Add Webhook takes the admin role anyway
        hook = {
            "name": WEBHOOK_NAME,
            "description": "automedia が課題の変更を受け取ります",
            "hookUrl": needs.webhook_url,
            "allEvent": "false",
            "activityTypeIds[]": list(needs.activity_types),
        }
        steps.append(("automedia への Webhook", "webhooks", hook))
    return steps


def _apply(client: BacklogClient, tenant, step: tuple[str, str, dict]) -> str:
    label, kind, data = step
    try:
        client.project_add(tenant.backlog_project_key, kind, data)
    except BacklogError as exc:
        return f"Backlog: 追加できませんでした: {label}: {exc}"
    return f"Backlog: 追加しました: {label}"


def _manual(tenant, state: ProjectState, steps: list) -> list[str]:
    name = state.user.get("name") or state.user.get("userId") or "?"
    lines = [
        f"Backlog: API キーのユーザー「{name}」は管理者ではないため、何も変更していません。"
        " 管理者が Backlog のプロジェクト設定で次を行ってください（または管理者のキーで setup_tenant を実行）:"
    ]
    for label, kind, data in steps:
        if kind == "statuses":
            lines.append(f"  - プロジェクト設定 → 状態 → 追加: {label}")
        elif kind == "customFields":
            lines.append(f"  - プロジェクト設定 → カスタム属性 → 追加（形式: 文字列）: {label}")
        else:
            types = "、".join(str(t) for t in data["activityTypeIds[]"])
            lines.append(
                f"  - プロジェクト設定 → インテグレーション → Webhook → 追加: URL {data['hookUrl']}"
                f"（通知するイベント: 種別 {types}: 課題の追加・更新・コメント・削除・まとめて更新）"
            )
    return lines
