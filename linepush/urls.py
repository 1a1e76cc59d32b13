from django.urls import path

from linepush.api import PushItemCreateView

urlpatterns = [
    path("api/linepush/items/", PushItemCreateView.as_view(), name="linepush-items"),
]
