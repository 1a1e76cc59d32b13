"""Seed a demo tenant wired to the sandbox's fake Backlog, and a local admin user."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.utils import timezone

from console.models import LineTestRecipient
from core.models import Tenant, TenantMembership
from deliveries.channels.models import ChannelAccount
from deliveries.services import tenant_webhook_urls
from line.models import LineContact, LineSource
from linepush.models import LinePushItem

DEMO_SLUG = "demo"
DEMO_PROJECT = "DEMO"
SANDBOX_API_KEY = "sandbox-api-key"
# An Instagram business account id of the usual shape; `python -m sandbox` makes its fake
# Instagram answer for whatever id the demo account holds.
DEMO_IG_USER_ID = "17841400000000001"
DEMO_GROUPS = ("C" + "d" * 32, "C" + "e" * 32)  # LINE's group id format
DEMO_TEST_RECIPIENT = "U" + "f" * 32  # the demo manager's own LINE (a user id)


class Command(BaseCommand):
    help = "デモテナント（サンドボックスの Backlog に接続）と管理ユーザーを作成します。"

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--sandbox-url", default=settings.SANDBOX_BACKLOG_URL)

    def handle(self, *args, base_url: str, sandbox_url: str, **opts):
        tenant, _ = Tenant.objects.update_or_create(
            slug=DEMO_SLUG,
            defaults={
                "name": "デモ事務所",
                "backlog_base_url": sandbox_url,
                "backlog_api_key": SANDBOX_API_KEY,
                "backlog_project_key": DEMO_PROJECT,
                "line_channel_token": "sandbox-line-token",
                "line_channel_secret": "sandbox-line-secret",
                "operators": ["user:manager"],
                "quiet_hours": {
                    "enabled": True,
                    "timezone": "Asia/Tokyo",
                    "ranges": [{"from": "23:00", "to": "07:00"}],
                    "mode": "defer",
                },
            },
        )
        self._contacts(tenant)
        self._line_groups(tenant)
        call_command("import_templates", str(settings.BASE_DIR / "templates" / "line"), stdout=self.stdout)
        self._channel_accounts(tenant)
        urls = tenant_webhook_urls(tenant=tenant, base_url=base_url)
        self.stdout.write(f"デモテナント: {tenant} → Backlog {sandbox_url} / {DEMO_PROJECT}")
        self.stdout.write(f"  Backlog Webhook URL: {urls['backlog_webhook_url']}")
        self._people(base_url, tenant)

    def _contacts(self, tenant: Tenant) -> None:
        """Demo LINE friends, so the demo issue's 対象タグ (tag:active, !tag:opt_out) has recipients."""
        for n, tags in enumerate([["active"], ["active", "vip"], ["active"], ["active", "opt_out"]], start=1):
            LineContact.objects.update_or_create(
                tenant=tenant, user_id=f"U{n:032x}", defaults={"display_name": f"デモ友だち{n}", "tags": tags}
            )

    def _line_groups(self, tenant: Tenant) -> None:
        """Two LINE groups and their posts, so the LINE screens are not empty: one waiting for
        a manager's approval, one that failed (with LINE's answer)."""
        talent, _ = LineSource.objects.update_or_create(
            tenant=tenant,
            group_id=DEMO_GROUPS[0],
            defaults={
                "name": "タレント連絡グループ",
                "allow_outbound_push": True,
                "push_opt_in_triggers": ["task_approved", "reminder", "escalation"],
                "member_count": 6,
            },
        )
        LineSource.objects.update_or_create(
            tenant=tenant, group_id=DEMO_GROUPS[1], defaults={"name": "撮影チーム", "member_count": 4}
        )
        posts = {
            "demo:escalation:1": {
                "trigger_type": "escalation",
                "status": LinePushItem.Status.WAITING_APPROVAL,
                "payload": [{"type": "text", "text": "【要確認】DEMO-1 の配信前チェックをお願いします。"}],
            },
            "demo:reminder:1": {
                "trigger_type": "reminder",
                "status": LinePushItem.Status.FAILED,
                "payload": [{"type": "text", "text": "明日 10 時から撮影です。"}],
                "attempt_count": 1,
                "last_error": "LINE が 400 を返しました: The request body has 1 error(s)（デモ）",
            },
        }
        for key, fields in posts.items():
            LinePushItem.objects.update_or_create(
                tenant=tenant,
                dedupe_key=key,
                defaults={"ext_group_id": talent.group_id, "scheduled_at": timezone.now(), **fields},
            )

    def _channel_accounts(self, tenant: Tenant) -> None:
        """Sandbox accounts and templates for Instagram / TikTok / HubSpot (the fakes accept these)."""
        accounts = {
            "instagram": {"access_token": "sandbox-instagram-token", "ig_user_id": DEMO_IG_USER_ID},
            "tiktok": {
                "access_token": "sandbox-tiktok-token",
                "refresh_token": "sandbox-tiktok-refresh",
                "open_id": "sandbox-open-id",
            },
            "hubspot": {"access_token": "sandbox-hubspot-token", "hubspot_mode": "note"},
        }
        for channel, fields in accounts.items():
            ChannelAccount.objects.update_or_create(tenant=tenant, channel=channel, defaults=fields)
            call_command(
                "import_templates", str(settings.BASE_DIR / "templates" / channel), stdout=self.stdout
            )

    def _people(self, base_url: str, tenant: Tenant) -> None:
        """The demo's manager (the tour is a manager's) and the superuser, with their passwords;
        the manager's own LINE as the tenant's test recipient, so テスト配信 answers."""
        self.stdout.write(f"管理画面: {base_url}/admin/")
        manager = self._login(
            "manager", "マネージャー（ふだんの操作）", email="manager@example.jp", is_staff=True
        )
        TenantMembership.objects.update_or_create(
            user=manager, tenant=tenant, defaults={"role": TenantMembership.Role.MANAGER}
        )
        self._login("admin", "スーパーユーザー（システム設定）", is_staff=True, is_superuser=True)
        LineTestRecipient.objects.update_or_create(
            tenant=tenant, user_id=DEMO_TEST_RECIPIENT, defaults={"name": "デモ担当者（自分の LINE）"}
        )

    def _login(self, username: str, role: str, **defaults):
        user, created = get_user_model().objects.get_or_create(username=username, defaults=defaults)
        if not created and user.has_usable_password() and user.last_login:
            self.stdout.write(f"  {role}: ユーザー: {username}  （パスワードは変更済み）")
            return user
        password = secrets.token_urlsafe(9)
        user.set_password(password)
        user.save()
        self.stdout.write(f"  {role}: ユーザー: {username}  パスワード: {password}")
        return user
