from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from automedia_site.health import healthz, metrics_view

# Models that moved to another app (their admin pages follow the app label): the old admin
# addresses, bookmarked or linked, lead to the new ones.
LINE_MODELS = (
    "linecontact",
    "lineerasure",
    "linesource",
    "linewebhookevent",
    "linesurveyrule",
    "lineanswer",
    "linecoupon",
    "lineplan",
    "linepushsettings",
    "linemonthlyusage",
)
MOVED_ADMIN_PAGES = {
    "deliveries/tenant": "core/tenant",
    "console/tenantmembership": "core/tenantmembership",
    **{f"linepush/{model}": f"line/{model}" for model in LINE_MODELS},
}

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
    path("", include("line.urls")),
    path("", include("linepush.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]
