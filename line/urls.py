from django.urls import path

from line.views import LineWebhookView

urlpatterns = [
    path("hooks/line/<slug:slug>", LineWebhookView.as_view(), name="line-webhook"),
]
