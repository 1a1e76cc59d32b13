"""Make a tenant's Backlog project and LINE channel ready: `manage.py setup_tenant SLUG`.

Adds the statuses automedia承認 / automedia実行済み / automediaエラー and the text custom fields
投稿日時 / 自動配信実行日時, registers the tenant's Backlog webhook, sets the LINE webhook URL and
runs LINE's test of it; what exists is skipped, so a second run changes nothing. When the
Backlog key's user is no Administrator it prints the manual steps instead. `--dry-run` lists
the changes without making them.
"""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.models import Tenant
from deliveries.setup.connections import tenant_setup


class Command(BaseCommand):
    help = (
        "テナントの Backlog プロジェクトと LINE チャネルを automedia 用に設定します（あるものはそのまま）。"
    )

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--dry-run", action="store_true", help="変更せず、変更内容だけ表示する")
        parser.add_argument(
            "--base-url", default=None, help="automedia の公開 URL（既定: 設定 PUBLIC_BASE_URL）"
        )

    def handle(self, *args, **opts):
        tenant = Tenant.objects.filter(slug=opts["slug"]).first()
        if tenant is None:
            raise CommandError(
                f"テナント「{opts['slug']}」がありません（manage.py add_tenant で作成してください）。"
            )
        base_url = opts["base_url"] or settings.PUBLIC_BASE_URL
        report = tenant_setup(tenant=tenant, base_url=base_url, dry_run=opts["dry_run"])
        for line in report.lines:
            self.stdout.write(line)
        if report.failed:
            raise CommandError("設定できなかった接続があります（上の表示を確かめてください）。")
