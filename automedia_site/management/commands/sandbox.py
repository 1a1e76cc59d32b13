"""The `sandbox` process of `make run`: fake Backlog (and later fake LINE) on loopback.

Every tenant whose Backlog URL points at the sandbox gets its project, its webhook
wired to this automedia, and a demo issue ready to approve.
"""

from __future__ import annotations

import signal
import threading
from datetime import timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand
from django.utils import timezone

from automedia_site.sandbox.backlog import FakeBacklog, demo_description
from deliveries.models import Tenant
from deliveries.services import tenant_webhook_urls


class Command(BaseCommand):
    help = "サンドボックス（偽の Backlog）を起動し、デモテナントを接続します。"

    def add_arguments(self, parser):
        parser.add_argument("--backlog-url", default=settings.SANDBOX_BACKLOG_URL)
        parser.add_argument(
            "--public-url", default=settings.PUBLIC_BASE_URL, help="automedia's URL for webhooks"
        )

    def handle(self, *args, backlog_url: str, public_url: str, **opts):
        tenants = list(Tenant.objects.filter(backlog_base_url=backlog_url.rstrip("/")))
        if not tenants:
            self.stderr.write(f"no tenant uses {backlog_url}; run `manage.py seed_demo` first")
        address = urlsplit(backlog_url)
        api_key = tenants[0].backlog_api_key if tenants else "sandbox-api-key"
        fake = FakeBacklog(api_key=api_key, host=address.hostname, port=address.port, webhook_mode="post")
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        with fake:
            for tenant in tenants:
                self._wire(fake, tenant, public_url)
            self.stdout.write(f"偽の Backlog: {fake.base_url}/  （課題の作成・状態変更はこのページから）")
            self.stdout.flush()
            stopping.wait()

    def _wire(self, fake: FakeBacklog, tenant: Tenant, public_url: str) -> None:
        key = tenant.backlog_project_key
        fake.add_project(key, name=f"{tenant.name} 配信")
        fake.set_webhook(key, tenant_webhook_urls(tenant=tenant, base_url=public_url)["backlog_webhook_url"])
        publish_at = timezone.now() + timedelta(minutes=2)
        issue = fake.create_issue(
            key,
            summary="【デモ】年末セールのお知らせ",
            description=demo_description(publish_at),
            status="処理中",
        )
        self.stdout.write(
            f"  {tenant.slug}: プロジェクト {key}、デモ課題 {issue['issueKey']}（状態を automedia承認 にすると配信予約されます）"
        )
