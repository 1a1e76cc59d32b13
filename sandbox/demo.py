"""The `sandbox` process of `make run` (``python -m sandbox``): the fakes on loopback.

Every tenant whose Backlog URL points at the sandbox gets a project as Backlog makes one
(its four statuses, no custom field), made ready by `manage.py setup_tenant` as on a real
space (statuses, custom fields, the webhook; the LINE webhook URL and LINE's test of it),
then a demo issue ready to approve; the connection checks are printed. Messages the fake
LINE accepts are printed, so the whole flow can be watched in the `make run` output.

The sandbox reads automedia's settings and demo tenants (seeded by ``manage.py
seed_demo``): the sandbox imports the product, never the other way round.
"""

from __future__ import annotations

import argparse
import io
import signal
import sys
import threading
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TextIO
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.management import CommandError, call_command
from django.utils import timezone

from backlog_bridge.models import BacklogEvent
from core.models import Tenant
from core.timeutil import fmt_jst
from deliveries.models import ContentTask
from sandbox.backlog import NEW_PROJECT_STATUSES, FakeBacklog, demo_description
from sandbox.line import FakeLine
from sandbox.platforms import SandboxPlatforms


def main(argv: Sequence[str] | None = None) -> None:
    """Run the sandbox until SIGTERM / SIGINT; Django must be set up (sandbox/__main__.py)."""
    args = _parser().parse_args(argv)
    Sandbox(out=sys.stdout, err=sys.stderr).run(
        backlog_url=args.backlog_url,
        line_url=args.line_url,
        public_url=args.public_url,
        platform_urls={
            "instagram_url": args.instagram_url,
            "tiktok_url": args.tiktok_url,
            "hubspot_url": args.hubspot_url,
        },
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sandbox",
        description="サンドボックス（偽の Backlog）を起動し、デモテナントを接続します。",
    )
    parser.add_argument("--backlog-url", default=settings.SANDBOX_BACKLOG_URL)
    parser.add_argument("--line-url", default=settings.SANDBOX_LINE_URL)
    parser.add_argument("--instagram-url", default=settings.SANDBOX_INSTAGRAM_URL)
    parser.add_argument("--tiktok-url", default=settings.SANDBOX_TIKTOK_URL)
    parser.add_argument("--hubspot-url", default=settings.SANDBOX_HUBSPOT_URL)
    parser.add_argument("--public-url", default=settings.PUBLIC_BASE_URL, help="automedia's URL for webhooks")
    return parser


DEMO_LEAD = timedelta(minutes=3)
WEB_WAIT_SECONDS = 30.0


def demo_publish_at(now: datetime) -> datetime:
    """The demo issue's 投稿日時: at least DEMO_LEAD ahead, on a whole minute (the body's
    投稿日時 has minutes only, so rounding down would take up to a minute off the lead)."""
    ahead = now + DEMO_LEAD
    whole = ahead.replace(second=0, microsecond=0)
    return whole if whole == ahead else whole + timedelta(minutes=1)


class Sandbox:
    def __init__(self, *, out: TextIO, err: TextIO) -> None:
        self.stdout = out
        self.stderr = err
        self._due: list[tuple[str, datetime]] = []  # each demo issue and its 投稿日時

    def run(self, *, backlog_url: str, line_url: str, public_url: str, platform_urls: dict[str, str]) -> None:
        platforms = SandboxPlatforms(**platform_urls)
        tenants = list(Tenant.objects.filter(backlog_base_url=backlog_url.rstrip("/")))
        if not tenants:
            self._write(f"no tenant uses {backlog_url}; run `manage.py seed_demo` first", err=True)
        address = urlsplit(backlog_url)
        api_key = tenants[0].backlog_api_key if tenants else "sandbox-api-key"
        fake = FakeBacklog(api_key=api_key, host=address.hostname, port=address.port, webhook_mode="post")
        stopping = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stopping.set())
        signal.signal(signal.SIGINT, lambda *_: stopping.set())
        line_address = urlsplit(line_url)
        secret = tenants[0].line_channel_secret if tenants else ""
        line = FakeLine(host=line_address.hostname, port=line_address.port, channel_secret=secret)
        # automedia runs on loopback: the fake takes its http webhook URL, which LINE never would.
        line.channel.http_hosts = frozenset({"127.0.0.1", "localhost"})
        with fake, line, platforms:
            self._wait_for_web(public_url)
            for tenant in tenants:
                platforms.accept(tenant)
                self._wire(fake, tenant, public_url)
                self._wire_platforms(platforms, fake, tenant)
            self._checks()
            self._write(f"偽の Backlog: {fake.base_url}/  （課題の作成・状態変更はこのページから）")
            self._write(f"偽の LINE:    {line.base_url}  （受け取ったメッセージはここに表示されます）")
            self._write(f"偽の SNS / CRM: {platforms.urls()}")
            self._due_summary()
            self.stdout.flush()
            shown = 0
            while not stopping.wait(0.5):
                shown = self._show_received(line, shown)
                platforms.show_new(self.stdout)

    def _write(self, text: str, *, err: bool = False) -> None:
        (self.stderr if err else self.stdout).write(text + "\n")

    def _wire(self, fake: FakeBacklog, tenant: Tenant, public_url: str) -> None:
        # The fake Backlog starts empty (issue and activity ids from 1 again), so
        # automedia's mirror of the previous sandbox run must go too.
        ContentTask.objects.filter(tenant=tenant).delete()
        BacklogEvent.objects.filter(tenant=tenant).delete()
        Tenant.objects.filter(pk=tenant.pk).update(last_activity_id=None)
        key = tenant.backlog_project_key
        fake.add_project(key, name=f"{tenant.name} 配信", statuses=NEW_PROJECT_STATUSES, custom_fields=())
        self._command(tenant, "setup_tenant", tenant.slug, "--base-url", public_url)
        publish_at = demo_publish_at(timezone.now())
        issue = fake.create_issue(
            key,
            summary="【デモ】年末セールのお知らせ",
            description=demo_description(publish_at),
            status="処理中",
        )
        self._write(
            f"  {tenant.slug}: プロジェクト {key}、デモ課題 {issue['issueKey']}（投稿日時 {fmt_jst(publish_at)}。"
            "それまでに状態を automedia承認 にすると配信予約されます）"
        )
        self._due.append((issue["issueKey"], publish_at))

    def _due_summary(self) -> None:
        """The demo issues' 投稿日時 again, last: the start's other lines scroll them away."""
        for key, publish_at in self._due:
            self._write(
                f"▶ デモ課題 {key} の投稿日時: {fmt_jst(publish_at)}。"
                "それまでに偽の Backlog で状態を automedia承認 にすると、その時刻に配信されます。"
            )

    def _command(self, tenant: Tenant, *args: str) -> None:
        """Run a management command as a person would, and print what it says."""
        out = io.StringIO()
        try:
            call_command(*args, stdout=out, stderr=out)
        except CommandError as exc:
            out.write(f"{exc}\n")
        for line in out.getvalue().splitlines():
            self._write(f"  {tenant.slug}: {line}")

    def _checks(self) -> None:
        self._write("接続確認（manage.py check_connections、管理画面の「接続状況」）:")
        out = io.StringIO()
        try:
            call_command("check_connections", stdout=out)
        except CommandError as exc:
            out.write(f"{exc}\n")
        for line in out.getvalue().splitlines():
            self._write(f"  {line}")

    def _wait_for_web(self, public_url: str, timeout: float = WEB_WAIT_SECONDS) -> None:
        """Give automedia's web process a moment to start: LINE's webhook test reaches it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                httpx.get(public_url, timeout=1.0)
            except httpx.HTTPError:
                time.sleep(0.5)
            else:
                return
        self._write(
            f"automedia（{public_url}）がまだ応答しません。LINE の Webhook テストは失敗と表示されます。",
            err=True,
        )

    def _wire_platforms(self, platforms: SandboxPlatforms, fake: FakeBacklog, tenant: Tenant) -> None:
        """Demo issues for Instagram / TikTok / HubSpot, due a minute after the LINE one."""
        keys = platforms.wire(fake, tenant, demo_publish_at(timezone.now()) + timedelta(minutes=1))
        if keys:
            self._write(f"  {tenant.slug}: チャネル別のデモ課題 {'、'.join(keys)}")

    def _show_received(self, line: FakeLine, shown: int) -> int:
        sent = line.sent()
        for request in sent[shown:]:
            to = request.body.get("to")
            count = len(to) if isinstance(to, list) else 1
            texts = [
                m.get("text", f"<{m.get('type')}>").replace("\n", " ")
                for m in request.body.get("messages", [])
            ]
            self._write(f"LINE が受信: {request.path} 宛先 {count} 件: {' / '.join(texts)}")
        if len(sent) > shown:
            self.stdout.flush()
        return len(sent)
