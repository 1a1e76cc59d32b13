from django.contrib import admin
from django.urls import include, path

from automedia_site.health import healthz, metrics_view

admin.site.site_header = "automedia 管理"
admin.site.site_title = "automedia"
admin.site.index_title = "運用メニュー"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("", include("backlog_bridge.urls")),
]
