"""Approval-time checks: what would fail at publish time is said at approval.

Every way a task is approved (webhook, admin, scan rescue, `/automedia send`) and the preview
run them before anything is scheduled: LINE's validate endpoint, LINE coupons, the LINE quota
forecast, each platform's template rules, Instagram's publishing limit and TikTok's posting
choices. What may still change before the due time without an edit of the issue (a template
not imported yet, a missing account) is said in the comment but refuses nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from backlog_bridge.audience import AudienceError, parse_audience
from backlog_bridge.body.task import ParsedTask, TemplateRef
from core.models import Tenant
from deliveries.channels import posts
from deliveries.channels.base import TransportError
from deliveries.channels.instagram.approval import instagram_verdict
from deliveries.channels.line.publisher import audience_plan
from deliveries.channels.line.templates import render_messages
from deliveries.channels.line.transport import line_transport
from deliveries.channels.publisher import PublishFailed
from deliveries.channels.rendering import template_resolve
from deliveries.channels.templates import render_channel_template
from deliveries.channels.templating import RenderError
from deliveries.channels.tiktok.approval import tiktok_verdict
from deliveries.models import CHANNEL_LABELS, ContentTask
from deliveries.quota_forecast import ForecastUnavailable, quota_forecast


@dataclass
class ApprovalChecks:
    lines: list[str] = field(default_factory=list)  # what was checked, one verdict each
    problems: list[str] = field(default_factory=list)  # each one refuses the approval
    line_messages: int | None = None  # LINE messages this send uses (the quota of later forecasts)
    creator: dict | None = None  # TikTok's creator_info, when it was asked (the preview shows it)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        """`LINE 検証: OK / クォータ見込み: 3 通（今月 182 / 200）`; empty when nothing was checked."""
        return " / ".join(self.lines)

    def refusal(self) -> str:
        """The comment of a refused approval: every problem, then what was checked."""
        problems = "\n".join(f"- {p}" for p in self.problems)
        text = f"承認時の確認で問題が見つかったため配信を予約できません。\n{problems}"
        return text + (f"\n確認した内容: {self.summary()}" if self.lines else "")

    def to_json(self, *, checked_at: datetime) -> dict:
        return {
            "checked_at": checked_at.isoformat(),
            "lines": self.lines,
            "problems": self.problems,
            "line_messages": self.line_messages,
        }


# Checks of rendered LINE messages against what an app above keeps (linepush: a `coupon`
# message must name a running coupon of the tenant); each returns its problems.
LINE_MESSAGE_CHECKS: list[Callable[..., list[str]]] = []


def line_message_check_register(check: Callable[..., list[str]]) -> None:
    if check not in LINE_MESSAGE_CHECKS:  # ready() may run more than once in tests
        LINE_MESSAGE_CHECKS.append(check)


def approval_check(
    *,
    tenant: Tenant,
    parsed: ParsedTask,
    due_at: datetime,
    now: datetime,
    override: dict | None = None,
    task: ContentTask | None = None,
) -> ApprovalChecks:
    """Everything about this send that can be known now; calls LINE (validate, quota),
    Instagram's content_publishing_limit and TikTok's creator_info, no publishing endpoint."""
    override = override or {}
    channel = parsed.channel or ("line" if override else None)
    checks = ApprovalChecks()
    if channel in posts.CHANNELS:
        _platform_rules(checks, tenant, channel, parsed, override, now)
        if channel == "instagram" and checks.ok:
            verdict = instagram_verdict(tenant=tenant, due_at=due_at, now=now, task=task)
            checks.lines += verdict.lines
            checks.problems += verdict.problems
    elif channel == "line":
        messages = _line_messages(checks, tenant, parsed, override)
        if messages is not None:
            expression = override.get("audience") or parsed.audience
            _line_validate(checks, tenant, messages, expression)
            checks.problems += [
                p for check in LINE_MESSAGE_CHECKS for p in check(tenant_id=tenant.pk, messages=messages)
            ]
            _line_quota(checks, tenant, expression, due_at, now, task)
    return checks


def approval_check_counts_others(*, tenant: Tenant, parsed: ParsedTask) -> bool:
    """Whether the check's verdict may depend on what other approvals scheduled: a LINE send
    with a token gets a quota forecast, which counts the sends scheduled and not sent yet, and
    an Instagram post counts the posts scheduled in its publishing window.
    Such an approval is checked only once the ones before it are registered."""
    return (parsed.channel == "line" and bool(tenant.line_channel_token)) or parsed.channel == "instagram"


def approval_checks_store(*, task: ContentTask, checks: ApprovalChecks, now: datetime) -> None:
    """Kept on the task: the admin's detail page shows it, later forecasts count its messages."""
    ContentTask.objects.filter(pk=task.pk).update(approval_checks=checks.to_json(checked_at=now))


# -- LINE -------------------------------------------------------------------------------


def _line_messages(
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


def _line_validate(checks: ApprovalChecks, tenant: Tenant, messages: list[dict], expression: str) -> None:
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


def _line_quota(
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
    try:
        forecast = quota_forecast(tenant=tenant, plan=plan, due_at=due_at, now=now, task=task)
    except ForecastUnavailable as exc:
        checks.lines.append(f"クォータ見込み: 未計算（{exc}）")
        return
    if forecast is None:
        return
    checks.line_messages = forecast.messages
    checks.lines.append(forecast.line())
    if problem := forecast.problem():
        checks.problems.append(problem)


# -- Instagram, TikTok, HubSpot ----------------------------------------------------------


def _platform_rules(
    checks: ApprovalChecks, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict, now: datetime
) -> None:
    label = CHANNEL_LABELS[channel]
    try:
        ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
        template = template_resolve(tenant=tenant, ref=ref, channel=channel) if ref is not None else None
    except (RenderError, ValueError) as exc:
        checks.lines.append(f"{label} の投稿ルール: 未確認（テンプレを読めません: {exc}）")
        return
    if template is None:
        checks.lines.append(f"{label} の投稿ルール: 未確認（テンプレが指定されていません）")
        return
    try:
        content = render_channel_template(channel, template.messages, parsed.variables)
    except RenderError as exc:
        checks.lines.append(f"{label} の投稿ルール: NG")
        checks.problems += [f"{label} の投稿ルール: {p}" for p in exc.problems]
        return
    checks.lines.append(f"{label} の投稿ルール: OK")
    if channel == "tiktok":
        verdict = tiktok_verdict(tenant=tenant, choices=parsed.tiktok, content=content, now=now)
        checks.lines += verdict.lines
        checks.problems += verdict.problems
        checks.creator = verdict.creator
