"""Running comment commands: permission, once-only, and one reply comment per comment."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from backlog_bridge.audience import AudienceError, parse_audience
from backlog_bridge.body.task import ParsedTask
from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.events import EventHandler, EventIgnored
from backlog_bridge.models import TYPE_COMMENTED, BacklogEvent, CommandRun
from backlog_bridge.statuses import BacklogConfigError, status_id_require, status_name_of
from core.channels import CHANNELS, DEFAULT_CHANNEL, channel_label
from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.approve.actions import revert_status_id
from deliveries.approve.checks import approval_check, approval_checks_store
from deliveries.approve.preview import preview_build, preview_comment
from deliveries.channels.approval_base import ApprovalChecks
from deliveries.channels.corrections import correction_send
from deliveries.channels.posts import committed_post
from deliveries.channels.publishing import send_problems
from deliveries.channels.registry import channel_part
from deliveries.comment_commands.parse import USAGE, Command, commands_parse
from deliveries.issues import IssueState, issue_read, task_for_issue
from deliveries.models import STATUS_APPROVED, ContentTask, DeliveryAttempt, DeliverySchedule
from deliveries.services import approval_record, schedule_delete, schedule_due_at, schedule_upsert

logger = logging.getLogger(__name__)

OWN_PREFIX = "[automedia]"


def comment_handle(*, event: BacklogEvent, client: BacklogClient) -> str:
    """Run the `/automedia` commands of one IssueCommented event; returns what happened.

    The webhook is unsigned, so its body only says which comment to look at: the text
    and the author come from Backlog's own copy of the comment."""
    tenant = event.tenant
    comment_id = event.payload["content"]["comment"]["id"]  # checked by _stored_event_check
    comment = comment_read(client=client, issue_key=event.issue_key, comment_id=comment_id)
    text, user = comment.get("content") or "", comment.get("createdUser") or {}
    if text.lstrip().startswith(OWN_PREFIX) or _is_self(client, user):
        return "own comment"
    parsed = commands_parse(text)
    if parsed.empty:
        return "comment stored"
    if not tenant.is_operator(user):
        name = user.get("name") or user.get("userId") or "このユーザー"
        _reply(
            client,
            event.issue_key,
            f"{OWN_PREFIX} {name} さんには automedia のコマンドを実行する権限がありません。",
        )
        return "not allowed"
    replies = [f"{OWN_PREFIX} {p}\n{USAGE}" for p in parsed.problems]
    done = []
    for command in parsed.commands:
        result = _run_once(tenant, event, comment_id, command, user, client)
        if result is not None:
            replies.append(result)
            done.append(command.verb)
    if replies:
        _reply(client, event.issue_key, "\n\n".join(replies))
    return f"commands: {', '.join(done) or 'none'}; problems: {len(parsed.problems)}"


def comment_read(*, client: BacklogClient, issue_key: str, comment_id: int) -> dict:
    """Backlog's copy of a comment; EventIgnored when Backlog has no such comment on the
    issue (deleted, or never there). Other errors propagate, so the event is retried."""
    try:
        comment = client.get_comment(issue_key, comment_id)
    except BacklogError as exc:
        if exc.status == 404:
            raise EventIgnored(f"comment {comment_id} not found on {issue_key}") from exc
        raise
    if not isinstance(comment, dict):
        raise EventIgnored(f"comment {comment_id} on {issue_key}: unexpected answer")
    return comment


def _is_self(client: BacklogClient, user: dict) -> bool:
    try:
        return bool(user) and user.get("id") == client.myself().get("id")
    except BacklogError:
        return False  # the [automedia] prefix check still guards our own replies


def _run_once(
    tenant: Tenant, event: BacklogEvent, comment_id, command: Command, user: dict, client
) -> str | None:
    """None when this comment's command already ran (a redelivered or re-read event)."""
    try:
        with transaction.atomic():
            run = CommandRun.objects.create(
                tenant=tenant,
                issue_key=event.issue_key,
                comment_id=comment_id,
                verb=command.verb,
                args=command.kwargs,
                user={k: user.get(k) for k in ("id", "userId", "name")},
            )
    except IntegrityError:
        return None
    try:
        result = HANDLERS[command.verb](
            tenant=tenant, issue_key=event.issue_key, command=command, user=user, client=client
        )
    except BacklogError:
        run.delete()  # let the event's retry run it again
        raise
    CommandRun.objects.filter(pk=run.pk).update(result=result[:2000])
    return result


def _reply(client: BacklogClient, issue_key: str, text: str) -> None:
    client.add_comment(issue_key, text)


# -- handlers ------------------------------------------------------------------------


def _status(*, tenant, issue_key, command, user, client) -> str:
    state = issue_read(client=client, issue_key=issue_key)
    task = ContentTask.objects.filter(tenant=tenant, issue_key=issue_key).first()
    schedule = DeliverySchedule.objects.filter(task=task).first() if task else None
    lines = [
        f"{OWN_PREFIX} 状態（/automedia status）",
        f"- Backlog の状態: {state.status_name if state else '課題がありません'}",
    ]
    if schedule:
        stage = (
            "Backlog への書き戻し待ち" if schedule.stage == DeliverySchedule.Stage.WRITEBACK else "配信待ち"
        )
        lines.append(f"- 配信予定: {fmt_jst(schedule.due_at)}（{stage}）")
        lines.append(f"- 再試行回数: {schedule.attempts}")
        lines.append(f"- 最後のエラー: {schedule.last_error or 'なし'}")
    else:
        lines.append("- 配信予定: なし（予約されていません）")
    delivered = state.delivered_at if state else None
    lines.append(f"- 自動配信実行日時: {fmt_jst(delivered) if delivered else 'なし'}")
    if task:
        attempts = DeliveryAttempt.objects.filter(task=task).count()
        label = channel_label(task.channel or DEFAULT_CHANNEL)
        lines.append(f"- {label} への送信試行: {attempts} 回")
    return "\n".join(lines)


def _cancel(*, tenant, issue_key, command, user, client) -> str:
    task = ContentTask.objects.filter(tenant=tenant, issue_key=issue_key).first()
    schedule = DeliverySchedule.objects.filter(task=task).first() if task else None
    if schedule is None:
        return f"{OWN_PREFIX} 取り消す配信予約はありません。"
    if schedule.delivery_owns(timezone.now()):
        return (
            f"{OWN_PREFIX} 配信処理が始まっているため取り消せません（送信済みのメッセージは取り消せません）。"
        )
    # Move the status back too: an approved issue without a schedule would be a "leak"
    # that the daily scan rescues.
    status_id = revert_status_id(client=client, project_key=tenant.backlog_project_key)
    client.update_issue(issue_key, status_id=status_id)
    schedule_delete(task=task)
    name = status_name_of(client=client, project_key=tenant.backlog_project_key, status_id=status_id)
    ContentTask.objects.filter(pk=task.pk).update(status_id=status_id, status_name=name)
    return f"{OWN_PREFIX} 配信予約（{fmt_jst(schedule.due_at)}）を取り消し、状態を「{name}」に戻しました。"


def schedule_cancel(*, tenant: Tenant, issue_key: str, client: BacklogClient) -> str:
    """`/automedia cancel` for other callers (the admin's 予約取消): the reply text."""
    return _cancel(tenant=tenant, issue_key=issue_key, command=None, user={}, client=client)


def _preview(*, tenant, issue_key, command, user, client) -> str:
    state = issue_read(client=client, issue_key=issue_key)
    if state is None:
        return f"{OWN_PREFIX} 課題が見つかりません。"
    return preview_comment(preview_build(tenant=tenant, issue_key=issue_key, state=state, now=timezone.now()))


def _send(*, tenant, issue_key, command, user, client) -> str:
    state = issue_read(client=client, issue_key=issue_key)
    if state is not None and state.belongs_to(tenant):
        issue_key = state.issue_key  # the key Backlog answers to, whatever the comment's event said
    problems = _send_problems(tenant, issue_key, command.kwargs, state)
    try:
        # Resolved before scheduling: a send the status cannot follow would never be delivered.
        status_id = _approved_status_id(tenant, state, client)
    except BacklogConfigError as exc:
        problems.append(str(exc))
    checks = None
    if not problems:  # the same approval-time checks as an approval in Backlog
        now = timezone.now()
        checks = approval_check(
            tenant=tenant,
            parsed=state.parsed,
            due_at=schedule_due_at(publish_at=None, now=now),
            now=now,
            override=command.kwargs,
            task=ContentTask.objects.filter(tenant=tenant, issue_key=issue_key).first(),
        )
        problems += checks.problems
    if problems:
        lines = "\n".join(f"- {p}" for p in problems)
        checked = f"\n確認: {checks.summary()}" if checks and checks.lines else ""
        return f"{OWN_PREFIX} 送信できません:\n{lines}{checked}"
    due = _send_schedule(tenant, command.kwargs, state, checks)
    if status_id is not None:
        client.update_issue(issue_key, status_id=status_id)
    by = user.get("name") or user.get("userId") or ""
    channel = _channel(state.parsed)
    return (
        f"{OWN_PREFIX} /automedia send を受け付けました（{by}）。{fmt_jst(due)} に配信します"
        f"（チャネル: {channel_label(channel)}、テンプレ: {command.kwargs['template']}、"
        f"対象: {_target(channel, command.kwargs.get('audience') or state.parsed.audience)}）。"
        + (f"\n確認: {checks.summary()}" if checks.lines else "")
    )


def _approved_status_id(tenant: Tenant, state: IssueState | None, client: BacklogClient) -> int | None:
    """The status a send moves the issue to; None when it is there already (or not found)."""
    if state is None or state.status_name == STATUS_APPROVED:
        return None
    return status_id_require(client=client, project_key=tenant.backlog_project_key, name=STATUS_APPROVED)


def _channel(parsed: ParsedTask) -> str:
    return parsed.channel or DEFAULT_CHANNEL  # a send names a template of the default channel


def _target(channel: str, audience: str) -> str:
    return channel_part(channel, "preview").target(audience)


def _send_problems(tenant: Tenant, issue_key: str, args: dict, state: IssueState | None) -> list[str]:
    if state is None:
        return ["課題が見つかりません"]
    if not state.belongs_to(tenant):
        return [f"課題 {state.issue_key or '?'} はこのテナントのプロジェクトにありません"]
    problems = []
    if state.delivered_at:
        problems.append(
            f"{fmt_jst(state.delivered_at)} に配信済みです（再配信するには自動配信実行日時を空にしてください）"
        )
    schedule = DeliverySchedule.objects.select_related("task").filter(
        tenant=tenant, task__issue_key=issue_key
    )
    problems += _in_flight(schedule.first())
    return problems + _content_problems(tenant, state.parsed, args) + _audience_problems(state.parsed, args)


def _in_flight(schedule: DeliverySchedule | None) -> list[str]:
    if schedule is None:
        return []
    if schedule.delivery_owns(timezone.now()):
        return ["配信処理中です"]
    # Between re-checks of a container / upload the row is not leased, but a new approval
    # would publish a second time while this one's post may already be on the platform.
    post = committed_post(schedule.task)
    if post is None:
        return []
    handle = post.publish_id or post.container_id or post.note_id or post.send_key
    return [
        f"{channel_label(post.channel)} への投稿を処理中です（{handle}）。"
        "結果が出るまで待ってから、もう一度送ってください"
    ]


def _content_problems(tenant: Tenant, parsed: ParsedTask, args: dict) -> list[str]:
    """The template rendered and validated as the delivery would, with the channel's account."""
    return send_problems(
        tenant=tenant, channel=_channel(parsed), parsed=parsed, override=args, now=timezone.now()
    )


def _audience_problems(parsed: ParsedTask, args: dict) -> list[str]:
    channel, given = _channel(parsed), args.get("audience")
    label = channel_label(channel)
    if not CHANNELS[channel].audience:
        if given:
            return [f"{label} では audience を指定できません（投稿はアカウントに公開され、宛先は選べません）"]
        return []
    expression = given or parsed.audience
    if not expression:
        return ["対象タグがありません（audience=<対象タグ> を付けるか、課題の 対象タグ に書いてください）"]
    try:
        audience = parse_audience(expression)
    except AudienceError as exc:
        return [f"{'audience' if given else '対象タグ'} を解釈できません: {exc}"]
    if audience.groups and not CHANNELS[channel].groups:
        return [f"{label} では group: を対象にできません（LINE のグループ専用です）"]
    return []


def _send_schedule(tenant: Tenant, args: dict, state: IssueState, checks: ApprovalChecks):
    """Register the send like an approval (so the webhook of our status change finds nothing to do)."""
    now = timezone.now()
    with transaction.atomic():
        task = task_for_issue(tenant=tenant, state=state)
        ContentTask.objects.filter(pk=task.pk).update(status_name=STATUS_APPROVED)
        approval_record(task=task, state=state, now=now, override=args)
        approval_checks_store(task=task, checks=checks, now=now)
        task.refresh_from_db()
        due_at = schedule_due_at(publish_at=None, now=now)  # send now
        schedule = schedule_upsert(task=task, due_at=due_at, reason=DeliverySchedule.Reason.COMMAND)
    return schedule.due_at


def _correct(*, tenant, issue_key, command, user, client) -> str:
    """A correction to the recipients of the delivered LINE message; the issue's status stays."""
    task = ContentTask.objects.select_related("tenant").filter(tenant=tenant, issue_key=issue_key).first()
    by = user.get("name") or user.get("userId") or ""
    result = correction_send(task=task, text=command.kwargs.get("text", ""), by=by)
    head = f"/automedia correct（{by}）" if by else "/automedia correct"
    return f"{OWN_PREFIX} {head}: {result.message}"


HANDLERS = {"status": _status, "cancel": _cancel, "preview": _preview, "send": _send, "correct": _correct}


def _on_commented(event: BacklogEvent, client: BacklogClient) -> str:
    return comment_handle(event=event, client=client)


EVENT_HANDLERS: dict[int, EventHandler] = {TYPE_COMMENTED: _on_commented}
