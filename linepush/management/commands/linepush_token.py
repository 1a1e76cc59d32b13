"""Issue an API token for `POST /api/linepush/items/`: `manage.py linepush_token SLUG --name NAME`."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from core.models import Tenant
from linepush.models import LineApiToken


class Command(BaseCommand):
    help = "LINE グループ投稿 API のトークンを発行します（トークンはこの 1 回だけ表示されます）。"

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="api", help="what the token is for, e.g. talent-hub")

    def handle(self, *args, slug: str, name: str, **opts):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"tenant {slug!r} does not exist")
        _, plain = LineApiToken.issue(tenant=tenant, name=name)
        self.stdout.write(plain)
