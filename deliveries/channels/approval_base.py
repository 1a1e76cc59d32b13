"""What every channel's approval-time checks share: the verdict they fill in, and the
template rules of the channels that publish one post from an account.

Each channel's `approval` module answers `check(checks, …)` (what would fail at publish
time, said at approval) and `counts_others(tenant)` (whether its verdict depends on what
other approvals scheduled); deliveries/approve/checks.py runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from backlog_bridge.body.task import ParsedTask, TemplateRef
from core.channels import channel_label
from core.models import Tenant
from deliveries.channels.placeholders import RenderError
from deliveries.channels.post_templates import render_channel_template
from deliveries.channels.template_store import template_resolve


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


def post_rules(
    checks: ApprovalChecks, *, tenant: Tenant, channel: str, parsed: ParsedTask, override: dict
) -> dict | None:
    """The channel's template rules (deliveries/channels/<kind>/templates.py, their one home)
    applied to the filled template; the post when it passes them."""
    label = channel_label(channel)
    try:
        ref = TemplateRef.parse(override["template"]) if override.get("template") else parsed.template
        template = template_resolve(tenant=tenant, ref=ref, channel=channel) if ref is not None else None
    except (RenderError, ValueError) as exc:
        checks.lines.append(f"{label} の投稿ルール: 未確認（テンプレを読めません: {exc}）")
        return None
    if template is None:
        checks.lines.append(f"{label} の投稿ルール: 未確認（テンプレが指定されていません）")
        return None
    try:
        content = render_channel_template(channel, template.messages, parsed.variables)
    except RenderError as exc:
        checks.lines.append(f"{label} の投稿ルール: NG")
        checks.problems += [f"{label} の投稿ルール: {p}" for p in exc.problems]
        return None
    checks.lines.append(f"{label} の投稿ルール: OK")
    return content
