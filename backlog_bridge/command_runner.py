"""Running comment commands: permission, once-only, and one reply comment per comment."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from automedia_site.timeutil import fmt_jst
from backlog_bridge.client import BacklogClient, BacklogError
from backlog_bridge.commands import USAGE, Command, commands_parse
from backlog_bridge.models import BacklogEvent, CommandRun
from backlog_bridge.parser import TemplateRef
from backlog_bridge.services import IssueState, issue_read, revert_status_id
from deliveries.audience import AudienceError, parse_audience
from deliveries.delivery import DeliveryFailed, delivery_render
from deliveries.models import STATUS_APPROVED, ContentTask, DeliveryAttempt, DeliverySchedule, Tenant
from deliveries.preview import preview_build, preview_comment
from deliveries.rendering import RenderError, template_resolve
from deliveries.services import schedule_delete, schedule_upsert

logger = logging.getLogger(__name__)

OWN_PREFIX = "[automedia]"
SEND_LEAD = timedelta(seconds=5)  # seed 000: send now = at(now+5s), through the same scheduler


def comment_handle(*, event: BacklogEvent, client: BacklogClient) -> str:
    """Run the `/automedia` commands of one IssueCommented event; returns what happened."""
    tenant, payload = event.tenant, event.payload
    comment = (payload.get("content") or {}).get("comment") or {}
    text, user = comment.get("content") or "", payload.get("createdUser") or {}
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
        result = _run_once(tenant, event, comment.get("id"), command, user, client)
        if result is not None:
            replies.append(result)
            done.append(command.verb)
    if replies:
        _reply(client, event.issue_key, "\n\n".join(replies))
    return f"commands: {', '.join(done) or 'none'}; problems: {len(parsed.problems)}"


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
                comment_id=comment_id or event.activity_id,
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
        lines.append(f"- LINE への送信試行: {attempts} 回")
    return "\n".join(lines)


def _cancel(*, tenant, issue_key, command, user, client) -> str:
    task = ContentTask.objects.filter(tenant=tenant, issue_key=issue_key).first()
    schedule = DeliverySchedule.objects.filter(task=task).first() if task else None
    if schedule is None:
        return f"{OWN_PREFIX} 取り消す配信予約はありません。"
    in_flight = schedule.lease_until is not None and schedule.lease_until > timezone.now()
    if in_flight or schedule.stage == DeliverySchedule.Stage.WRITEBACK:
        return (
            f"{OWN_PREFIX} 配信処理が始まっているため取り消せません（送信済みのメッセージは取り消せません）。"
        )
    # Move the status back too: an approved issue without a schedule would be a "leak"
    # that the daily scan rescues.
    status_id = revert_status_id(client=client, project_key=tenant.backlog_project_key)
    client.update_issue(issue_key, status_id=status_id)
    schedule_delete(task=task)
    name = next((s["name"] for s in client.statuses(tenant.backlog_project_key) if s["id"] == status_id), "")
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
    problems = _send_problems(tenant, issue_key, command.kwargs, state)
    if problems:
        return f"{OWN_PREFIX} 送信できません:\n" + "\n".join(f"- {p}" for p in problems)
    due = _send_schedule(tenant, issue_key, command.kwargs, state)
    if state.status_name != STATUS_APPROVED:
        status_id = client.status_id(tenant.backlog_project_key, STATUS_APPROVED)
        client.update_issue(issue_key, status_id=status_id)
    by = user.get("name") or user.get("userId") or ""
    audience = command.kwargs.get("audience") or state.parsed.audience
    return f"{OWN_PREFIX} /automedia send を受け付けました（{by}）。{fmt_jst(due)} に配信します（テンプレ: {command.kwargs['template']}、対象: {audience}）。"


def _send_problems(tenant: Tenant, issue_key: str, args: dict, state: IssueState | None) -> list[str]:
    if state is None:
        return ["課題が見つかりません"]
    problems = []
    if state.delivered_at:
        problems.append(
            f"{fmt_jst(state.delivered_at)} に配信済みです（再配信するには自動配信実行日時を空にしてください）"
        )
    schedule = DeliverySchedule.objects.filter(tenant=tenant, task__issue_key=issue_key).first()
    if schedule and (
        schedule.stage == DeliverySchedule.Stage.WRITEBACK
        or (schedule.lease_until and schedule.lease_until > timezone.now())
    ):
        problems.append("配信処理中です")
    try:
        template_resolve(tenant=tenant, ref=TemplateRef.parse(args["template"]))
        delivery_render(tenant=tenant, parsed=state.parsed, override=args)
    except (RenderError, ValueError, DeliveryFailed) as exc:
        problems.append(getattr(exc, "reason", str(exc)))
    if args.get("audience"):
        try:
            parse_audience(args["audience"])
        except AudienceError as exc:
            problems.append(f"audience を解釈できません: {exc}")
    return problems


def _send_schedule(tenant: Tenant, issue_key: str, args: dict, state: IssueState):
    """Register the send like an approval (so the webhook of our status change finds nothing to do)."""
    now = timezone.now()
    with transaction.atomic():
        task, _ = ContentTask.objects.get_or_create(tenant=tenant, issue_key=issue_key)
        ContentTask.objects.filter(pk=task.pk).update(
            status_name=STATUS_APPROVED,
            approved_at=now,
            approval_fingerprint=state.fingerprint,
            approved_publish_at=state.parsed.publish_at,
            approved_template_ref=str(state.parsed.template or ""),
            approval_seq=F("approval_seq") + 1,
            command_override=args,
        )
        task.refresh_from_db()
        schedule = schedule_upsert(task=task, due_at=now + SEND_LEAD, reason=DeliverySchedule.Reason.COMMAND)
    return schedule.due_at


HANDLERS = {"status": _status, "cancel": _cancel, "preview": _preview, "send": _send}
