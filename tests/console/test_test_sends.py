"""テスト配信's refusals: no test recipient, a viewer, LINE refusing; and the test recipient's id rule."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from console.models import LineTestRecipient
from linepush.models import LinePushItem
from tests.helpers.console import messages_of

pytestmark = pytest.mark.django_db

ME = "U" + "2" * 32


@pytest.fixture
def item(tenant):
    return LinePushItem.objects.create(
        tenant=tenant,
        ext_group_id="C" + "a" * 32,
        trigger_type="reminder",
        payload=[{"type": "text", "text": "撮影です"}],
        dedupe_key="reminder:9",
        scheduled_at=timezone.now(),
    )


def url(item) -> str:
    return reverse("admin:linepush_linepushitem_test_send", args=[item.pk])


def test_it_asks_for_a_test_recipient_first(as_manager, item, line):
    response = as_manager.post(url(item), follow=True)

    assert any("テスト配信の宛先がありません" in m for m in messages_of(response))
    assert line.sent("push") == []


def test_a_viewer_cannot_test_send(client, viewer, item, line):
    LineTestRecipient.objects.create(tenant=item.tenant, name="自分", user_id=ME)
    client.force_login(viewer)

    assert client.post(url(item)).status_code == 403
    assert line.sent("push") == []


def test_it_says_when_line_refuses(as_manager, item, line):
    LineTestRecipient.objects.create(tenant=item.tenant, name="自分", user_id=ME)
    line.fail_next(
        400, path_prefix="/v2/bot/message/push", body={"message": "The request body has 1 error(s)"}
    )

    response = as_manager.post(url(item), follow=True)

    assert any("テスト配信に失敗しました: 自分" in m for m in messages_of(response))


def test_a_test_recipient_is_a_line_user_id(tenant):
    with pytest.raises(ValidationError):
        LineTestRecipient(tenant=tenant, name="グループ", user_id="C" + "a" * 32).full_clean()
