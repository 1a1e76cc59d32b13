"""Check every tenant's connections now: `manage.py check_connections [--tenant SLUG]`.

The same checks as `add_tenant` and the admin's 「今すぐ確認」; each result is kept for the
接続状況 page, and a failure stays on 要対応 until a check passes. Exits 1 when one fails.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.models import Tenant
from deliveries.setup.connections import connections_check


class Command(BaseCommand):
    help = "テナントの接続（Backlog・LINE・Instagram・TikTok・HubSpot）をいま確認します。"

    def add_arguments(self, parser):
        parser.add_argument("--tenant", metavar="SLUG", help="このテナントだけ確認する")

    def handle(self, *args, **opts):
        tenants = Tenant.objects.filter(is_active=True)
        if opts["tenant"]:
            tenants = Tenant.objects.filter(slug=opts["tenant"])
            if not tenants.exists():
                raise CommandError(f"テナント「{opts['tenant']}」がありません。")
        failed = 0
        for tenant in tenants:
            self.stdout.write(f"{tenant.slug}:")
            for result in connections_check(tenant=tenant):
                failed += not result.ok
                for line in result.lines():
                    self.stdout.write(f"  {line}")
        if failed:
            raise CommandError(f"接続の確認に {failed} 件失敗しました。")
