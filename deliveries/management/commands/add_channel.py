"""Create or update a tenant's channel account: `manage.py add_channel SLUG CHANNEL ...`.

    add_channel acme instagram --ig-user-id 1784… --access-token TOKEN --expires-in 5184000
    add_channel acme tiktok --open-id … --access-token … --expires-in 86400 \\
        --refresh-token … --refresh-expires-in 15552000
    add_channel acme hubspot --access-token pat-… --mode note|email [--tag-property automedia_tags]

A secret given as `-` is read from standard input (so it stays out of the process list).
Secrets are never printed: the output says only whether each one is set. Saving a new
token clears the account's "token invalid" flag. `--json` prints one JSON object.

The token and account are checked against the platform before they are saved (the smallest
documented call that proves both); `--no-check` saves without it, with a warning.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from core.models import Tenant
from core.timeutil import iso_jst
from deliveries.channels.models import ChannelAccount
from deliveries.channels.registry import channel_part
from deliveries.setup.connections import account_check, connections_record

SECRETS = ("access_token", "refresh_token")


class Command(BaseCommand):
    help = "テナントの Instagram / TikTok / HubSpot アカウント（トークン）を登録または更新します。"

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("channel", choices=ChannelAccount.Channel.values)
        parser.add_argument(
            "--access-token", help="長期トークン / アクセストークン / HubSpot のトークン（- で標準入力）"
        )
        parser.add_argument(
            "--expires-in", type=int, help="アクセストークンの残り秒数（API が返した expires_in）"
        )
        parser.add_argument("--expires-at", help="アクセストークンの有効期限（ISO-8601）")
        parser.add_argument("--refresh-token", help="TikTok のリフレッシュトークン（- で標準入力）")
        parser.add_argument("--refresh-expires-in", type=int, help="TikTok の refresh_expires_in（秒）")
        parser.add_argument("--ig-user-id")
        parser.add_argument("--open-id")
        parser.add_argument(
            "--mode", choices=ChannelAccount.HubSpotMode.values, help="HubSpot: note か email"
        )
        parser.add_argument("--tag-property", help="HubSpot: 対象タグと照合するコンタクトのプロパティ")
        parser.add_argument("--email-from", help="HubSpot メールの送信元")
        parser.add_argument("--reply-to", help="HubSpot メールの返信先")
        parser.add_argument("--no-check", action="store_true", help="トークンを確認せずに保存する")
        parser.add_argument("--json", action="store_true", help="JSON で 1 行出力する")

    def handle(self, *args, **opts):
        tenant = Tenant.objects.filter(slug=opts["slug"]).first()
        if tenant is None:
            raise CommandError(
                f"テナント「{opts['slug']}」がありません（manage.py add_tenant で作成してください）。"
            )
        account = ChannelAccount.objects.filter(tenant=tenant, channel=opts["channel"]).first()
        created = account is None
        if created:
            account = ChannelAccount(tenant=tenant, channel=opts["channel"])
            _require(opts)
        self._apply(account, opts, timezone.now())
        try:
            account.full_clean()
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        result = self._check(account, opts["no_check"])
        account.save()
        if result is not None:
            connections_record(tenant=tenant, results=[result])
        self._report(account, created, opts["json"])

    def _check(self, account: ChannelAccount, no_check: bool):
        if no_check:
            self.stderr.write(
                "警告: トークンを確認せずに保存します（manage.py check_connections で確認できます）。"
            )
            return None
        result = account_check(account)
        if not result.ok:
            raise CommandError(f"保存しませんでした。{result.problem}")
        for fact in result.facts:
            self.stdout.write(f"接続確認 OK: {fact}")
        return result

    def _apply(self, account: ChannelAccount, opts: dict, now: datetime) -> None:
        for name in SECRETS:
            value = _secret(opts[name])
            if value is not None:
                setattr(account, name, value)
                account.token_invalid_at = None
                account.refreshed_at = now
        simple = {
            "ig_user_id": "ig_user_id",
            "open_id": "open_id",
            "mode": "hubspot_mode",
            "tag_property": "hubspot_tag_property",
            "email_from": "hubspot_email_from",
            "reply_to": "hubspot_reply_to",
        }
        for option, field in simple.items():
            if opts[option] is not None:
                setattr(account, field, opts[option])
        if opts["expires_in"] is not None:
            account.expires_at = now + timedelta(seconds=opts["expires_in"])
        if opts["expires_at"]:
            account.expires_at = _datetime(opts["expires_at"])
        if opts["refresh_expires_in"] is not None:
            account.refresh_expires_at = now + timedelta(seconds=opts["refresh_expires_in"])

    def _report(self, account: ChannelAccount, created: bool, as_json: bool) -> None:
        out = {
            "tenant": account.tenant.slug,
            "channel": account.channel,
            "created": created,
            "access_token_set": bool(account.access_token),
            "refresh_token_set": bool(account.refresh_token),
            "expires_at": iso_jst(account.expires_at) if account.expires_at else None,
            "ig_user_id": account.ig_user_id or None,
            "open_id": account.open_id or None,
            "hubspot_mode": None,
            **channel_part(account.channel, "account").report(account),
        }
        if as_json:
            self.stdout.write(json.dumps(out, ensure_ascii=False))
            return
        self.stdout.write(f"{'作成' if created else '更新'}しました: {account}")
        self.stdout.write(
            f"  トークン: {'設定済み' if out['access_token_set'] else '未設定'}、有効期限: {out['expires_at'] or '不明'}"
        )
        for line in channel_part(account.channel, "account").report_lines(account):
            self.stdout.write(line)


def _require(opts: dict) -> None:
    required = channel_part(opts["channel"], "account").REQUIRED_ON_CREATE
    missing = [f"--{name.replace('_', '-')}" for name in required if not opts[name]]
    if missing:
        raise CommandError(f"新しい {opts['channel']} アカウントには {', '.join(missing)} が必要です。")


def _secret(value: str | None) -> str | None:
    if value != "-":
        return value
    text = sys.stdin.readline().strip()
    if not text:
        raise CommandError("標準入力からトークンを読めませんでした。")
    return text


def _datetime(text: str) -> datetime:
    value = parse_datetime(text)
    if value is None:
        raise CommandError(f"--expires-at を日時として読めません: {text}")
    return value if timezone.is_aware(value) else timezone.make_aware(value)
