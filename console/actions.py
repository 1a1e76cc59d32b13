"""Admin views for a person's action on one object or a selection: parse, check, call one service, respond."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.admin import ModelAdmin
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _

from console.services import ACTION_ERRORS, ActionResult
from core.access import may_act, require_act, tenant_id_of

Service = Callable[..., ActionResult]


def object_action(
    model_admin: ModelAdmin, request: HttpRequest, object_id: str, service: Service, *, back: str = "change"
) -> HttpResponse:
    """POST only; another tenant's object is 404, a viewer gets 403; the result becomes a message."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    obj = model_admin.get_object(request, object_id)
    require_act(request.user, tenant_id_of(obj, model_admin.tenant_path))
    result = _run(service, obj, request.user)
    model_admin.message_user(request, result.message, messages.SUCCESS if result.ok else messages.ERROR)
    return HttpResponseRedirect(_back_url(model_admin, obj, back))


def bulk_action(
    model_admin: ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet,
    service: Service,
    *,
    done_text: str = "",
) -> None:
    """An admin action over a selection: objects the user may not act on are left alone.

    `done_text`: "%(count)d 件を…しました。" (translated by the caller)."""
    done, refused = 0, []
    for obj in queryset:
        if not may_act(request.user, tenant_id_of(obj, model_admin.tenant_path)):
            refused.append(_("%(obj)s: 閲覧のみの権限です。") % {"obj": obj})
            continue
        result = _run(service, obj, request.user)
        done += result.ok
        if not result.ok:
            refused.append(result.message)
    if done:
        text = str(done_text or _("%(count)d 件を処理しました。")) % {"count": done}
        model_admin.message_user(request, text, messages.SUCCESS)
    for message in refused:
        model_admin.message_user(request, message, messages.WARNING)


def _run(service: Service, obj: Model, user) -> ActionResult:
    try:
        return service(obj, user)
    except ACTION_ERRORS as exc:
        return ActionResult(
            False, _("Backlog との通信に失敗しました（もう一度お試しください）: %(error)s") % {"error": exc}
        )


def _back_url(model_admin: ModelAdmin, obj: Model, back: str) -> str:
    opts = model_admin.model._meta
    name = f"admin:{opts.app_label}_{opts.model_name}_{back}"
    return reverse(name, args=[] if back == "changelist" else [obj.pk])
