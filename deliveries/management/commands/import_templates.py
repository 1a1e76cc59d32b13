"""Import message templates: `manage.py import_templates DIR [--tenant SLUG] [--channel CH]`.

Every NAME.json in DIR becomes a revision of template NAME (a new one only when the
content changed). One line per file: `NAME@REV (new|unchanged)` or `NAME: error …`;
the exit code is 1 when any file failed.

The channel is `--channel`, else the folder's name when it is one of instagram /
tiktok / hubspot (`templates/instagram/NAME.json`), else LINE (`templates/line`, or any
other folder).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.channels import CHANNELS, DEFAULT_CHANNEL
from core.models import Tenant
from deliveries.channels.template_store import ImportResult, template_import


class Command(BaseCommand):
    help = (
        "フォルダの NAME.json（LINE メッセージオブジェクト 1〜5 件の配列）をテンプレートとして取り込みます。"
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path, help="NAME.json のあるフォルダ（例: templates/line）")
        parser.add_argument("--tenant", help="このテナント専用にする（省略時は全テナント共通）")
        parser.add_argument(
            "--channel",
            choices=tuple(CHANNELS),
            help="チャネル（省略時はフォルダ名が instagram / tiktok / hubspot ならそれ、ほかは line）",
        )

    def handle(self, *args, **opts):
        directory: Path = opts["directory"]
        if not directory.is_dir():
            raise CommandError(f"フォルダ「{directory}」がありません。")
        tenant = _tenant(opts["tenant"])
        channel = opts["channel"] or _channel_of(directory)
        results = template_import(directory=directory, tenant=tenant, channel=channel)
        if not results:
            raise CommandError(f"フォルダ「{directory}」に NAME.json がありません。")
        for result in results:
            self.stdout.write(_line(result), self.style.ERROR if result.error else None)
        failed = sum(1 for result in results if result.error)
        if failed:
            raise CommandError(f"{len(results)} 件中 {failed} 件のテンプレートを取り込めませんでした。")


def _channel_of(directory: Path) -> str:
    name = directory.resolve().name.lower()
    return name if name in CHANNELS else DEFAULT_CHANNEL


def _tenant(slug: str | None) -> Tenant | None:
    if slug is None:
        return None
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise CommandError(f"テナント「{slug}」がありません（manage.py add_tenant で作成してください）。")
    return tenant


def _line(result: ImportResult) -> str:
    if result.error:
        return f"{result.name}: error {result.error}"
    line = f"{result.name}@{result.rev} ({'new' if result.created else 'unchanged'})"
    if result.latest_rev:
        line += (
            f" 以前のリビジョンと同じ内容です。名前だけの参照は最新の"
            f" {result.name}@{result.latest_rev} のままです。"
        )
    return line
