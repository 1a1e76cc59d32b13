"""The admin's index and sidebar grouped by what a manager does, not by Django app.

Models of no group (Django's users and groups, django-q2, django-axes, memberships, the
LINE plans) are what only a superuser uses: they come last, under システム, and only for
superusers (a manager has no right to them anyway).
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

GROUPS = {
    "delivery": (
        _("配信"),
        (
            "deliveries.ContentTask",
            "deliveries.DeliverySchedule",
            "console.DeliveryOutcome",
            "deliveries.MessageTemplate",
            "line.LineCoupon",  # a manager creates them for LINE deliveries (docs/USAGE.md)
            "deliveries.ChannelAccount",
            "deliveries.ChannelPost",
        ),
    ),
    "linepush": (
        _("LINE グループ投稿"),
        (
            "console.PushApproval",
            "linepush.LinePushItem",
            "line.LineSource",
            "line.LineContact",
            "line.LineSurveyRule",
            "linepush.LinePushProblem",
        ),
    ),
    "settings": (
        _("設定"),
        (
            "core.Tenant",
            "console.LineTestRecipient",
            "console.NoticeSettings",
            "line.LinePushSettings",
            "linepush.LineTriggerPolicy",
            "linepush.LineApiToken",
        ),
    ),
    "records": (
        _("記録"),
        (
            "backlog_bridge.BacklogEvent",
            "backlog_bridge.CommandRun",
            "backlog_bridge.AIReview",
            "line.LineWebhookEvent",
            "line.LineMonthlyUsage",
            "console.ScanRun",
            "console.AttentionNotice",
        ),
    ),
}
SYSTEM = "system"


def grouped_app_list(app_list: list[dict], *, superuser: bool) -> list[dict]:
    """Django's app list (apps with their models) regrouped into GROUPS, in their order."""
    models = {f"{app['app_label']}.{m['object_name']}": (app, m) for app in app_list for m in app["models"]}
    groups, placed = [], set()
    for key, (name, members) in GROUPS.items():
        rows = [models[label][1] for label in members if label in models]
        placed.update(label for label in members if label in models)
        if rows:
            groups.append(_group(key, name, rows))
    rest = [row for label, (_app, row) in models.items() if label not in placed]
    if superuser and rest:
        groups.append(_group(SYSTEM, _("システム（スーパーユーザーのみ）"), rest))
    return groups


def _group(key: str, name, rows: list[dict]) -> dict:
    first = next((row for row in rows if row.get("admin_url")), rows[0])
    return {"name": name, "app_label": key, "app_url": first.get("admin_url") or "", "models": rows}
