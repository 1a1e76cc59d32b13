from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from automedia_site.health import healthz, metrics_view

# Models that moved to `core` (their admin pages follow the app label): the old admin
# addresses, bookmarked or linked, lead to the new ones.
MOVED_ADMIN_PAGES = {"deliveries/tenant": "core/tenant", "console/tenantmembership": "core/tenantmembership"}

urlpatterns = [
    *(
        re_path(
            rf"^admin/{old}/(?P<rest>.*)$",
            RedirectView.as_view(url=f"/admin/{new}/%(rest)s", query_string=True),
        )
        for old, new in MOVED_ADMIN_PAGES.items()
    ),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("", include("backlog_bridge.urls")),
    path("", include("linepush.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]
