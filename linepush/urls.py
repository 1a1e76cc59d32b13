from django.urls import path

from linepush.api import PushItemCreateView
from linepush.views import LineWebhookView

urlpatterns = [
    path("api/linepush/items/", PushItemCreateView.as_view(), name="linepush-items"),
    path("hooks/line/<slug:slug>", LineWebhookView.as_view(), name="line-webhook"),
]
