"""Issue an API token for `POST /api/linepush/items/`:
`manage.py linepush_token SLUG --name NAME [--triggers signal_approved,reminder] [--skip-approval]`."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from core.models import Tenant
from linepush.inbound_models import default_api_triggers
from linepush.models import LineApiToken


class Command(BaseCommand):
    help = "LINE グループ投稿 API のトークンを発行します（トークンはこの 1 回だけ表示されます）。"

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="api", help="what the token is for, e.g. talent-hub")
        parser.add_argument(
            "--triggers",
            default=",".join(default_api_triggers()),
            help="comma-separated trigger types the token may post (default: signal_approved)",
        )
        parser.add_argument(
            "--skip-approval",
            action="store_true",
            help="its posts follow the tenant's trigger policies instead of all waiting for a manager",
        )

    def handle(self, *args, slug: str, name: str, triggers: str, skip_approval: bool, **opts):
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"tenant {slug!r} does not exist")
        chosen = [t.strip() for t in triggers.split(",") if t.strip()]
        try:
            _, plain = LineApiToken.issue(
                tenant=tenant, name=name, triggers=chosen, skip_approval=skip_approval
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        self.stdout.write(plain)
