"""Create or update a tenant: `manage.py add_tenant SLUG --backlog-url URL ...`.

A new tenant, or a changed Backlog URL, key, project or LINE token, is checked against Backlog
and LINE before it is saved, and refused with what to fix; what the project still lacks is
listed with `setup_tenant`. `--no-check` saves without asking them (with a warning).
"""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import URLValidator

from core.backlog_url import validate_base_url
from core.connections import CheckResult
from core.models import Tenant, new_webhook_token
from core.quiet_hours import QuietHours
from deliveries.services import tenant_webhook_urls
from deliveries.setup.connections import connections_record, tenant_checks

REQUIRED_ON_CREATE = ("backlog_url", "backlog_api_key", "backlog_project")
CONNECTION_OPTIONS = ("backlog_url", "backlog_api_key", "backlog_project", "line_channel_token")


class Command(BaseCommand):
    help = "テナントを作成または更新し、Backlog / LINE に設定する Webhook URL を表示します。"

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name")
        parser.add_argument("--backlog-url", help="e.g. https://acme.backlog.jp")
        parser.add_argument("--backlog-api-key")
        parser.add_argument("--backlog-project", help="Backlog project key, e.g. TTRTAGSPIN")
        parser.add_argument("--line-channel-token")
        parser.add_argument("--line-channel-secret")
        parser.add_argument(
            "--operators",
            help="comma-separated, each typed: id:1001 (Backlog numeric user id) or user:yamada "
            "(userId); display names do not match",
        )
        parser.add_argument("--quiet-hours-file", type=Path, help="project.yml with a quiet_hours block")
        parser.add_argument("--publish-time-policy", choices=Tenant.PublishTimePolicy.values)
        parser.add_argument("--rotate-webhook-token", action="store_true")
        parser.add_argument(
            "--base-url", default=None, help="public URL of automedia (default: PUBLIC_BASE_URL)"
        )
        parser.add_argument("--no-check", action="store_true", help="save without checking Backlog / LINE")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        tenant = Tenant.objects.filter(slug=opts["slug"]).first()
        created = tenant is None
        if created:
            missing = [f"--{o.replace('_', '-')}" for o in REQUIRED_ON_CREATE if not opts[o]]
            if missing:
                raise CommandError(f"new tenant needs {', '.join(missing)}")
            tenant = Tenant(slug=opts["slug"])
        self._apply(tenant, opts)
        try:
            tenant.full_clean()
        except ValidationError as exc:
            raise CommandError(_messages(exc)) from exc
        opts["base_url"] = opts["base_url"] or settings.PUBLIC_BASE_URL
        results = self._check(tenant, created, opts)
        tenant.save()
        connections_record(tenant=tenant, results=results)
        self._report(tenant, created, opts, results)

    def _check(self, tenant: Tenant, created: bool, opts: dict) -> list[CheckResult]:
        if not created and not any(opts[o] for o in CONNECTION_OPTIONS):
            return []
        if opts["no_check"]:
            self.stderr.write(
                "警告: 接続を確認せずに保存します（manage.py check_connections で確認できます）。"
            )
            return []
        results = tenant_checks(tenant=tenant, base_url=opts["base_url"])
        refused = [f"{r.platform}: {r.problem}" for r in results if not r.ok]
        if refused:
            hint = "（直せない事情があるときは --no-check で確認せずに保存できます）"
            raise CommandError("保存しませんでした。\n" + "\n".join(refused) + "\n" + hint)
        return results

    def _apply(self, tenant: Tenant, opts: dict) -> None:
        if opts["backlog_url"]:
            _check_url(opts["backlog_url"])
            tenant.backlog_base_url = opts["backlog_url"].rstrip("/")
        simple = {
            "name": "name",
            "backlog_api_key": "backlog_api_key",
            "backlog_project": "backlog_project_key",
            "line_channel_token": "line_channel_token",
            "line_channel_secret": "line_channel_secret",
            "publish_time_policy": "publish_time_policy",
        }
        for option, field in simple.items():
            if opts[option] is not None:
                setattr(tenant, field, opts[option])
        tenant.name = tenant.name or tenant.slug
        if opts["operators"] is not None:
            tenant.operators = [o.strip() for o in opts["operators"].split(",") if o.strip()]
        if opts["quiet_hours_file"]:
            tenant.quiet_hours = _quiet_hours_from(opts["quiet_hours_file"])
        if opts["rotate_webhook_token"]:
            tenant.webhook_token = new_webhook_token()

    def _report(self, tenant: Tenant, created: bool, opts: dict, results: list[CheckResult]) -> None:
        urls = tenant_webhook_urls(tenant=tenant, base_url=opts["base_url"])
        if opts["json"]:
            checks = [{"platform": r.platform, "ok": r.ok, "lacks": list(r.lacks)} for r in results]
            out = {"slug": tenant.slug, "name": tenant.name, "created": created, **urls, "checks": checks}
            self.stdout.write(json.dumps(out, ensure_ascii=False))
            return
        self.stdout.write(f"{'作成' if created else '更新'}しました: {tenant}")
        self.stdout.write(f"Backlog Webhook URL: {urls['backlog_webhook_url']}")
        self.stdout.write(f"LINE Webhook URL:    {urls['line_webhook_url']}")
        for result in results:
            for line in result.lines():
                self.stdout.write(f"接続確認 {line}")


def _check_url(url: str) -> None:
    try:
        URLValidator(schemes=["http", "https"])(url)
    except ValidationError as exc:
        raise CommandError(f"--backlog-url is not a URL: {url}") from exc
    try:
        validate_base_url(url)  # the API key is sent to this host
    except ValidationError as exc:
        raise CommandError(f"--backlog-url {url}: {_messages(exc)}") from exc


def _quiet_hours_from(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from exc
    try:
        return QuietHours.from_yaml(text).to_config()
    except ValidationError as exc:
        raise CommandError(f"{path}: {_messages(exc)}") from exc


def _messages(exc: ValidationError) -> str:
    return "; ".join(exc.messages)
