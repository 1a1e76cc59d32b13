"""LINE at approval time: LINE's verdict on the messages as the publisher will render them,
the coupons they name (line/coupons.py), and the quota forecast (quota.py).
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from backlog_bridge.audience import AudienceError, parse_audience
from backlog_bridge.body.task import ParsedTask, TemplateRef
from core.models import Tenant
from core.transport import TransportError
from deliveries.channels.approval_base import ApprovalChecks
from deliveries.channels.line.publisher import audience_plan
from deliveries.channels.line.quota import quota_forecast
from deliveries.channels.line.templates import render_messages
from deliveries.channels.placeholders import RenderError
from deliveries.channels.publisher_base import PublishFailed
from deliveries.channels.template_store import template_resolve
from deliveries.models import ContentTask
from line.coupons import coupon_message_problems
from line.transport import line_transport


def check(
    checks: ApprovalChecks,
    *,
    tenant: Tenant,
    parsed: ParsedTask,
    override: dict,
    due_at: datetime,
    now: datetime,
    task: ContentTask | None,
) -> None:
    messages = _messages(checks, tenant, parsed, override)
    if messages is None:
        return
    expression = override.get("audience") or parsed.audience
    _validate(checks, tenant, messages, expression)
    checks.problems += coupon_message_problems(tenant_id=tenant.pk, messages=messages)
    _quota(checks, tenant, expression, due_at, now, task)


def counts_others(*, tenant: Tenant) -> bool:
    """A send with a token gets a quota forecast, which counts the sends scheduled and not sent yet."""
    return bool(tenant.line_channel_token)


def _messages(
    checks: ApprovalChecks, tenant: Tenant, parsed: ParsedTask, override: dict
) -> list[dict] | None:
    """The messages as the publisher will render them; None when they cannot be checked now."""
    if not tenant.line_channel_token:
        checks.lines.append("LINE 検証: 未実施（LINE チャネルアクセストークンが設定されていません）")
        return None
    try:
        ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
        template = template_resolve(tenant=tenant, ref=ref) if ref is not None else None
    except (RenderError, ValueError) as exc:
        checks.lines.append(f"LINE 検証: 未実施（テンプレを読めません: {exc}）")
        return None
    if template is None:
        checks.lines.append("LINE 検証: 未実施（テンプレが指定されていません）")
        return None
    try:
        return render_messages(
            messages=template.messages, variables=parsed.variables, attachments=parsed.attachments
        )
    except (RenderError, ValueError) as exc:
        checks.problems.append(f"メッセージを作成できません: {exc}")
        return None


def _send_kind(tenant: Tenant, expression: str) -> str:
    """The endpoint the publisher uses: push to `group:` targets, multicast to tagged users,
    narrowcast to a tag of LINE_NARROWCAST_MIN_RECIPIENTS followers or more."""
    try:
        if parse_audience(expression).is_group_target:
            return "push"
        if not settings.LINE_NARROWCAST_MIN_RECIPIENTS:
            return "multicast"
        return audience_plan(tenant=tenant, expression=expression)[0][0]
    except (AudienceError, PublishFailed):
        return "multicast"


def _validate(checks: ApprovalChecks, tenant: Tenant, messages: list[dict], expression: str) -> None:
    """LINE's answer to the send the publisher will make: a 400 is its verdict and refuses;
    any other failure only means LINE could not be asked, which never blocks an approval
    (https://developers.line.biz/en/reference/messaging-api/#validate-message-objects-of-push-message)."""
    kind = _send_kind(tenant, expression)
    if kind == "narrowcast":
        checks.lines.append(
            f"LINE 配信方法: ナローキャスト（対象タグが {settings.LINE_NARROWCAST_MIN_RECIPIENTS:,} 人以上のため、"
            "オーディエンスを作って 1 回で送ります）"
        )
    try:
        details = line_transport(tenant.line_channel_token).validate(kind=kind, messages=messages)
    except TransportError as exc:
        checks.lines.append(f"LINE 検証: LINE に確認できませんでした（{exc.message}）。承認は受け付けます")
        return
    if not details:
        checks.lines.append("LINE 検証: OK")
        return
    checks.lines.append("LINE 検証: NG")
    checks.problems += [
        f"LINE がメッセージを受け付けません（validate/{kind}）: {d.get('property') or 'messages'}: {d.get('message', '')}"
        for d in details
    ]


def _quota(
    checks: ApprovalChecks,
    tenant: Tenant,
    expression: str,
    due_at: datetime,
    now: datetime,
    task: ContentTask | None,
) -> None:
    try:
        plan = audience_plan(tenant=tenant, expression=expression)
    except PublishFailed as exc:
        checks.lines.append(f"クォータ見込み: 未計算（{exc.reason}）")
        return
    forecast = quota_forecast(tenant=tenant, plan=plan, due_at=due_at, now=now, task=task)
    checks.line_messages = forecast.messages
    checks.lines.append(forecast.line())
    if problem := forecast.problem():
        checks.problems.append(problem)
