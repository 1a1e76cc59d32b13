from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from automedia_site.health import healthz, metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("", include("backlog_bridge.urls")),
    path("", include("linepush.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
]
