from django.urls import path

from backlog_bridge.views import BacklogWebhookView

urlpatterns = [
    path(
        "hooks/backlog/<slug:slug>/<str:token>",
        BacklogWebhookView.as_view(),
        name="backlog-webhook",
    ),
]
