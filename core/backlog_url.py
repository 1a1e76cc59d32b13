"""Where a tenant's Backlog API key may be sent: a Backlog space's own https origin, or a
host listed in BACKLOG_ALLOWED_HOSTS. The Tenant model's field validator and the Backlog
client (before every request) ask the same question here."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

# A space's host: https://{spaceId}.backlog.com / .backlog.jp / .backlogtool.com
# (https://developer.nulab.com/ja/docs/backlog/api/2/get-issue, the request example).
SPACE_HOST = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.(?:backlog\.jp|backlog\.com|backlogtool\.com)")


def base_url_problem(url: str) -> str:
    """Why a tenant's API key must not be sent to `url`; empty when it may.

    Anything but a space's own https origin (another server, a cloud metadata address
    such as 169.254.169.254, a path or a user name in the URL) is refused unless its
    host is in BACKLOG_ALLOWED_HOSTS (the sandbox's fake Backlog on loopback).
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return _("Backlog URL として読めません。")
    host = parts.hostname or ""
    if "@" in parts.netloc or parts.path not in ("", "/") or parts.query or parts.fragment:
        return _("Backlog URL にはスペースの URL（例: https://acme.backlog.jp）だけを指定してください。")
    if host in settings.BACKLOG_ALLOWED_HOSTS and parts.scheme in ("http", "https"):
        return ""
    if parts.scheme != "https" or parts.netloc.lower() != host or not SPACE_HOST.fullmatch(host):
        return _(
            "Backlog URL は https://スペースID.backlog.jp / .backlog.com / .backlogtool.com のいずれかです"
            "（ほかのホストは設定 BACKLOG_ALLOWED_HOSTS への登録が必要です）。"
        )
    return ""


def validate_base_url(value: str) -> None:
    """The model field's and forms' check of a tenant's Backlog URL (`base_url_problem`)."""
    problem = base_url_problem(value)
    if problem:
        raise ValidationError(problem, code="backlog_host")
