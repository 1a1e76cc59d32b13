"""The `sandbox` process of `make run`: fake Backlog and fake LINE on loopback.

Every tenant whose Backlog URL points at the sandbox gets its project, its webhook
wired to this automedia, and a demo issue ready to approve. Messages the fake LINE
accepts are printed, so the whole flow can be watched in the `make run` output.
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
from automedia_site.sandbox.line import FakeLine
from automedia_site.sandbox.platforms import SandboxPlatforms
from backlog_bridge.models import BacklogEvent
from core.models import Tenant
from deliveries.models import ContentTask
from deliveries.services import tenant_webhook_urls


class Command(BaseCommand):
    help = "サンドボックス（偽の Backlog）を起動し、デモテナントを接続します。"

    def add_arguments(self, parser):
        parser.add_argument("--backlog-url", default=settings.SANDBOX_BACKLOG_URL)
        parser.add_argument("--line-url", default=settings.SANDBOX_LINE_URL)
        parser.add_argument("--instagram-url", default=settings.SANDBOX_INSTAGRAM_URL)
        parser.add_argument("--tiktok-url", default=settings.SANDBOX_TIKTOK_URL)
        parser.add_argument("--hubspot-url", default=settings.SANDBOX_HUBSPOT_URL)
        parser.add_argument(
            "--public-url", default=settings.PUBLIC_BASE_URL, help="automedia's URL for webhooks"
        )

    def handle(self, *args, backlog_url: str, line_url: str, public_url: str, **opts):
        platforms = SandboxPlatforms(
            instagram_url=opts["instagram_url"],
            tiktok_url=opts["tiktok_url"],
            hubspot_url=opts["hubspot_url"],
        )
        tenants = list(Tenant.objects.filter(backlog_base_url=backlog_url.rstrip("/")))
        if not tenants:
            self.stderr.write(f"no tenant uses {backlog_url}; run `manage.py seed_demo` first")
        address = urlsplit(backlog_url)
        api_key = tenants[0].backlog_api_key if tenants else "sandbox-api-key"
        fake = FakeBacklog(api_key=api_key, host=address.hostname, port=address.port, webhook_mode="post")
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        line_address = urlsplit(line_url)
        line = FakeLine(host=line_address.hostname, port=line_address.port)
        with fake, line, platforms:
            for tenant in tenants:
                self._wire(fake, tenant, public_url)
                self._wire_platforms(platforms, fake, tenant)
            self.stdout.write(f"偽の Backlog: {fake.base_url}/  （課題の作成・状態変更はこのページから）")
            self.stdout.write(f"偽の LINE:    {line.base_url}  （受け取ったメッセージはここに表示されます）")
            self.stdout.write(f"偽の SNS / CRM: {platforms.urls()}")
            self.stdout.flush()
            shown = 0
            while not stopping.wait(0.5):
                shown = self._show_received(line, shown)
                platforms.show_new(self.stdout)

    def _wire(self, fake: FakeBacklog, tenant: Tenant, public_url: str) -> None:
        # The fake Backlog starts empty (issue and activity ids from 1 again), so
        # automedia's mirror of the previous sandbox run must go too.
        ContentTask.objects.filter(tenant=tenant).delete()
        BacklogEvent.objects.filter(tenant=tenant).delete()
        Tenant.objects.filter(pk=tenant.pk).update(last_activity_id=None)
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

    def _wire_platforms(self, platforms: SandboxPlatforms, fake: FakeBacklog, tenant: Tenant) -> None:
        """Demo issues for Instagram / TikTok / HubSpot, due a minute after the LINE one."""
        keys = platforms.wire(fake, tenant, timezone.now() + timedelta(minutes=3))
        if keys:
            self.stdout.write(f"  {tenant.slug}: チャネル別のデモ課題 {'、'.join(keys)}")

    def _show_received(self, line: FakeLine, shown: int) -> int:
        sent = line.sent()
        for request in sent[shown:]:
            to = request.body.get("to")
            count = len(to) if isinstance(to, list) else 1
            texts = [
                m.get("text", f"<{m.get('type')}>").replace("\n", " ")
                for m in request.body.get("messages", [])
            ]
            self.stdout.write(f"LINE が受信: {request.path} 宛先 {count} 件: {' / '.join(texts)}")
        if len(sent) > shown:
            self.stdout.flush()
        return len(sent)
