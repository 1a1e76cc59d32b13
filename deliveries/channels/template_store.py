"""Versioned message templates: resolve `name@rev` and import.

A template is one channel's content with `{{ variable }}` placeholders (deliveries/channels/placeholders.py):
LINE's is a JSON array of 1–5 message objects (seed 001: テンプレ `announce_open@<commit>`,
文面 / 変数, 添付); each channel's rules are deliveries/channels/<kind>/templates.py.
Templates come from a folder of NAME.json files (the seed's theme repo); each distinct
content is one immutable `MessageTemplate` row whose `rev` is a hash of it. Every problem
message is Japanese: it is posted to the Backlog issue or answered to the API caller.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from backlog_bridge.body.task import TemplateRef
from core.channels import DEFAULT_CHANNEL
from core.models import Tenant
from deliveries.channels.placeholders import RenderError
from deliveries.channels.registry import channel_part
from deliveries.models import MessageTemplate

# A rev written shorter than stored (git style, as in the seed's `announce_open@3f2a9c1`).
MIN_REV_PREFIX = 7
SHOWN_REVS = 10
# Import-time stand-ins for placeholders: a string may be a URL built from a variable.


@dataclass(frozen=True)
class ImportResult:
    name: str
    rev: str = ""
    created: bool = False
    error: str | None = None
    # Set when the file equals an OLDER revision: `name` alone still means this newer rev.
    latest_rev: str | None = None


# --- resolve ----------------------------------------------------------------------


RESOLVED_TTL_SECONDS = 60.0
_resolved: dict[tuple, tuple[float, MessageTemplate]] = {}


def template_resolve(
    *, tenant: Tenant | None, ref: TemplateRef, channel: str = DEFAULT_CHANNEL
) -> MessageTemplate:
    """The tenant's own revision first, then the shared one (tenant=None).

    `rev` None means the latest (highest created_at, then id). A rev of at least
    MIN_REV_PREFIX characters also matches as a unique prefix of a stored rev.
    Revisions are immutable, so a `name@rev` found is remembered for a minute in this
    process (a burst of deliveries of one template reads it once); `name` alone never is.
    """
    key = (tenant.pk if tenant else None, ref.name, ref.rev, channel)
    hit = _resolved.get(key) if ref.rev else None
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    found = _resolve(tenant, ref, channel)
    if ref.rev:
        if len(_resolved) > 1024:
            _resolved.clear()
        _resolved[key] = (time.monotonic() + RESOLVED_TTL_SECONDS, found)
    return found


def _resolve(tenant: Tenant | None, ref: TemplateRef, channel: str) -> MessageTemplate:
    for scope in _scopes(tenant, ref.name, channel):
        found = _pick(scope, ref)
        if found is not None:
            return found
    raise RenderError([_not_found(tenant, ref, channel)])


def _scopes(tenant: Tenant | None, name: str, channel: str) -> list[QuerySet[MessageTemplate]]:
    templates = MessageTemplate.objects.filter(name=name, channel=channel).order_by("-created_at", "-id")
    shared = templates.filter(tenant__isnull=True)
    return [templates.filter(tenant=tenant), shared] if tenant is not None else [shared]


def _pick(scope: QuerySet[MessageTemplate], ref: TemplateRef) -> MessageTemplate | None:
    if ref.rev is None:
        return scope.first()
    exact = scope.filter(rev=ref.rev).first()
    if exact is not None or len(ref.rev) < MIN_REV_PREFIX:
        return exact
    # Compared in Python: LIKE is case-insensitive on SQLite but not on PostgreSQL.
    matches = [t for t in scope.filter(rev__startswith=ref.rev) if t.rev.startswith(ref.rev)]
    if len(matches) > 1:
        revs = "、".join(t.rev for t in matches[:SHOWN_REVS])
        raise RenderError(
            [
                f"テンプレ「{ref}」に当てはまるリビジョンが複数あります（{revs}）。リビジョンを長く書いてください。"
            ]
        )
    return matches[0] if matches else None


def _not_found(tenant: Tenant | None, ref: TemplateRef, channel: str) -> str:
    revs = [t.rev for scope in _scopes(tenant, ref.name, channel) for t in scope.only("rev")]
    if not revs:
        return (
            f"テンプレ「{ref}」が見つかりません（テンプレート「{ref.name}」は取り込まれていません。"
            "manage.py import_templates で取り込んでください）。"
        )
    shown = "、".join([f"{revs[0]}（最新）", *revs[1:SHOWN_REVS]])
    more = f" ほか {len(revs) - SHOWN_REVS} 件" if len(revs) > SHOWN_REVS else ""
    return f"テンプレ「{ref}」が見つかりません（{ref.name} のリビジョン: {shown}{more}）。"


# --- import -----------------------------------------------------------------------


def template_rev(messages: list) -> str:
    canonical = json.dumps(messages, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def template_import(
    *, directory: Path, tenant: Tenant | None = None, channel: str = DEFAULT_CHANNEL
) -> list[ImportResult]:
    """Import every NAME.json in `directory` (sorted); a bad file never stops the others.

    A file whose content is already stored under that name (same rev) makes no new
    row and reports created=False. That includes a file reverted to an OLDER
    revision: revisions are immutable and unique per (tenant, name, rev), so the
    old row cannot become "latest" again; `latest_rev` then names the revision that
    `name` alone still resolves to, and `name@rev` picks the reverted content.
    """
    paths = sorted(p for p in Path(directory).glob("*.json") if p.is_file())
    return [_import_file(path, tenant, channel) for path in paths]


def _import_file(path: Path, tenant: Tenant | None, channel: str) -> ImportResult:
    name = path.stem
    try:
        messages = _load_template(path, channel)
    except ValueError as exc:
        return ImportResult(name=name, error=str(exc))
    return _store(name, messages, tenant, channel, source=str(path))


def _load_template(path: Path, channel: str = DEFAULT_CHANNEL) -> list | dict:
    if problem := _name_problem(path.stem):
        raise ValueError(problem)
    try:
        messages = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError:
        raise ValueError("UTF-8 のテキストとして読めません。") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"JSON として読めません（{exc.lineno} 行 {exc.colno} 列: {exc.msg}）。") from None
    if problems := _template_problems(messages, channel):
        raise ValueError(" ".join(problems))
    return messages


def _template_problems(messages: object, channel: str) -> list[str]:
    return channel_part(channel, "templates").template_problems(messages)


def _name_problem(name: str) -> str | None:
    if len(name) > MessageTemplate._meta.get_field("name").max_length:
        return "ファイル名（テンプレート名）が長すぎます。"
    try:
        ref = TemplateRef.parse(name)
    except ValueError as exc:
        return str(exc)
    return None if ref.rev is None and ref.name == name else "ファイル名に @ や全角英数字は使えません。"


def _store(name: str, messages: list, tenant: Tenant | None, channel: str, *, source: str) -> ImportResult:
    rev = template_rev(messages)
    if not MessageTemplate.objects.filter(tenant=tenant, name=name, rev=rev).exists():
        try:
            with transaction.atomic():
                MessageTemplate.objects.create(
                    tenant=tenant, name=name, rev=rev, channel=channel, messages=messages, source=source
                )
            return ImportResult(name=name, rev=rev, created=True)
        except IntegrityError:
            pass  # a concurrent import stored the same revision first
    latest = (
        MessageTemplate.objects.filter(tenant=tenant, name=name, channel=channel)
        .order_by("-created_at", "-id")
        .first()
    )
    newer = latest.rev if latest is not None and latest.rev != rev else None
    return ImportResult(name=name, rev=rev, created=False, latest_rev=newer)
