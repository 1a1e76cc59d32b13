"""System checks: LINE credentials missing for a tenant that uses group posts or the webhook."""

from __future__ import annotations

from django.core.checks import Tags, Warning, register
from django.db import DatabaseError


@register(Tags.database)
def line_credentials(app_configs=None, **kwargs) -> list[Warning]:
    from core.models import Tenant

    try:
        tenants = list(
            Tenant.objects.filter(is_active=True, line_sources__allow_outbound_push=True).distinct()
        )
    except DatabaseError:
        return []  # not migrated yet
    problems = []
    for tenant in tenants:
        if not tenant.line_channel_token:
            problems.append(
                Warning(
                    f"テナント {tenant.slug} は LINE グループ投稿を許可していますが、チャネルアクセストークンがありません。",
                    hint="manage.py add_tenant SLUG --line-channel-token TOKEN",
                    id="linepush.W001",
                )
            )
        if not tenant.line_channel_secret:
            problems.append(
                Warning(
                    f"テナント {tenant.slug} にチャネルシークレットがなく、LINE Webhook を検証できません（401 になります）。",
                    hint="manage.py add_tenant SLUG --line-channel-secret SECRET",
                    id="linepush.W002",
                )
            )
    return problems
