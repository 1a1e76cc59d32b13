"""Who may see and act on which tenant: a staff user's memberships (manager or viewer);
superusers see and act on everything. The admin's scoping (`console.access`) and any
other screen ask here.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.utils.translation import gettext_lazy as _

from core.models import TenantMembership

CACHE_ATTR = "_automedia_tenant_roles"


def tenant_roles(user) -> dict[int, str]:
    """{tenant id: role} of a user's memberships (cached on the user object for the request)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return {}
    roles = getattr(user, CACHE_ATTR, None)
    if roles is None:
        roles = dict(TenantMembership.objects.filter(user=user).values_list("tenant_id", "role"))
        setattr(user, CACHE_ATTR, roles)
    return roles


def visible_tenant_ids(user) -> set[int] | None:
    """The tenants a user may see; None = all (superuser)."""
    if user.is_active and user.is_superuser:
        return None
    return set(tenant_roles(user))


def managed_tenant_ids(user) -> set[int] | None:
    """The tenants a user may act on; None = all (superuser)."""
    if user.is_active and user.is_superuser:
        return None
    return {tid for tid, role in tenant_roles(user).items() if role == TenantMembership.Role.MANAGER}


def may_see(user, tenant_id: int | None) -> bool:
    ids = visible_tenant_ids(user)
    return ids is None or tenant_id in ids


def may_act(user, tenant_id: int | None) -> bool:
    ids = managed_tenant_ids(user)
    return ids is None or tenant_id in ids


def may_act_somewhere(user) -> bool:
    ids = managed_tenant_ids(user)
    return ids is None or bool(ids)


def require_act(user, tenant_id: int | None) -> None:
    if not may_act(user, tenant_id):
        raise PermissionDenied(_("閲覧のみの権限では操作できません。"))


def scope(queryset: QuerySet, user, path: str = "tenant", *, shared: bool = False) -> QuerySet:
    """`queryset` limited to the user's tenants through the lookup `path` ("" = the Tenant itself).

    `shared`: rows with no tenant (shared templates) are visible to everyone.
    """
    ids = visible_tenant_ids(user)
    if ids is None:
        return queryset
    condition = Q(**{f"{path}__in" if path else "pk__in": ids})
    if shared:
        condition |= Q(**{f"{path}__isnull": True})
    return queryset.filter(condition)


def tenant_id_of(obj: Model, path: str) -> int | None:
    """Follow `path` ("tenant", "item__tenant", "" = obj is the Tenant) to the tenant's id."""
    if not path:
        return obj.pk
    *hops, last = path.split("__")
    for hop in hops:
        obj = getattr(obj, hop)
    return getattr(obj, f"{last}_id")
