"""友だち追加時の返信 on the LINE 投稿設定 page: a manager writes a text, an image and a coupon
from the account's (no JSON), LINE's rules are checked on save, and the saved reply is shown
as the bubbles a new friend sees; the JSON is only for superusers."""

from __future__ import annotations

import pytest
from django.urls import reverse

from line.models import LinePushSettings

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]

IMAGE = "https://example.jp/welcome.png"


@pytest.fixture
def settings_row(tenant):
    return LinePushSettings.objects.create(tenant=tenant)


def settings_url(row) -> str:
    return reverse("admin:line_linepushsettings_change", args=[row.pk])


def settings_form(row, **changes) -> dict:
    fields = ("tenant_rate_window_seconds", "timezone", "digest_hour")
    form = {"tenant": row.tenant_id, "tenant_rate_limit": "", "reply_text": "", "reply_image_url": ""}
    return form | {name: getattr(row, name) for name in fields} | changes


def test_a_manager_writes_the_reply_as_text_image_and_a_coupon_of_the_account(as_manager, settings_row, line):
    made_there = line.add_coupon("店頭で使える 10% オフ")  # made in LINE Official Account Manager
    line.close_coupon(line.add_coupon("終了したクーポン"))

    page = as_manager.get(settings_url(settings_row)).content.decode()
    response = as_manager.post(
        settings_url(settings_row),
        settings_form(
            settings_row,
            reply_text="友だち追加ありがとうございます",
            reply_image_url=IMAGE,
            registration_coupon=made_there,
        ),
    )

    assert 'name="registration_messages"' not in page  # no JSON to write
    assert 'name="reply_text"' in page and 'name="reply_image_url"' in page
    assert f'<option value="{made_there}">店頭で使える 10% オフ</option>' in page
    assert "終了したクーポン" not in page
    assert response.status_code == 302
    settings_row.refresh_from_db()
    assert settings_row.registration_messages == [
        {"type": "text", "text": "友だち追加ありがとうございます"},
        {"type": "image", "originalContentUrl": IMAGE, "previewImageUrl": IMAGE},
        {"type": "coupon", "couponId": made_there},
    ]


def test_the_saved_reply_fills_the_form_and_shows_as_line_bubbles(as_manager, settings_row, line):
    coupon_id = line.add_coupon("来店 10% オフ")
    settings_row.registration_messages = [
        {"type": "text", "text": "ようこそ"},
        {"type": "coupon", "couponId": coupon_id},
    ]
    settings_row.save()

    response = as_manager.get(settings_url(settings_row))
    page = response.content.decode()

    form = response.context["adminform"].form
    assert (form["reply_text"].value(), form["registration_coupon"].value()) == ("ようこそ", coupon_id)
    assert 'id="push-preview"' in page
    assert '<div class="am-bubble" data-kind="text">\n          ようこそ' in page
    assert "［クーポン］ 来店 10% オフ" in page  # the coupon by its title, not its id
    assert "送信する JSON" not in page and '"couponId"' not in page


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        (
            {"reply_image_url": "http://example.jp/welcome.png"},
            "LINE は https で始まる URL の画像しか送れません。",
        ),
        ({"reply_image_url": "https://example.jp/" + "a" * 2000}, "LINE で送れるのは 2,000 文字までです。"),
        ({"reply_text": "あ" * 5001}, "5,001 文字あります。LINE で送れるのは 5,000 文字までです。"),
    ],
)
def test_it_refuses_on_save_what_line_would_refuse(as_manager, settings_row, line, changes, problem):
    response = as_manager.post(settings_url(settings_row), settings_form(settings_row, **changes))

    assert response.status_code == 200
    assert problem in response.content.decode()
    settings_row.refresh_from_db()
    assert settings_row.registration_messages == []


def test_a_coupon_line_no_longer_runs_is_refused_on_save(as_manager, settings_row, line):
    coupon_id = line.add_coupon("店頭クーポン")
    settings_row.registration_messages = [{"type": "coupon", "couponId": coupon_id}]
    settings_row.save()  # while it ran
    line.close_coupon(coupon_id)  # in LINE Official Account Manager

    page = as_manager.get(settings_url(settings_row)).content.decode()
    response = as_manager.post(
        settings_url(settings_row),
        settings_form(settings_row, reply_text="ようこそ", registration_coupon=coupon_id),
    )

    assert f'<option value="{coupon_id}" selected>' in page  # still shown: a save does not drop it
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["registration_coupon"] == [
        f"クーポン「{coupon_id}」はこのテナントの配布中のクーポンではありません。"
    ]
    settings_row.refresh_from_db()
    assert settings_row.registration_messages == [{"type": "coupon", "couponId": coupon_id}]


def test_a_message_the_form_cannot_write_is_kept_and_only_a_superuser_sees_the_json(
    client, superuser, settings_row, line
):
    sticker = {"type": "sticker", "packageId": "446", "stickerId": "1988"}
    settings_row.registration_messages = [{"type": "text", "text": "ようこそ"}, sticker]
    settings_row.save()
    client.force_login(superuser)

    page = client.get(settings_url(settings_row)).content.decode()
    response = client.post(settings_url(settings_row), settings_form(settings_row, reply_text="こんにちは"))

    assert "友だち追加時の返信（送信する JSON）" in page and "&quot;stickerId&quot;: &quot;1988&quot;" in page
    assert response.status_code == 302
    settings_row.refresh_from_db()
    assert settings_row.registration_messages == [{"type": "text", "text": "こんにちは"}, sticker]


def test_an_empty_form_means_no_reply(as_manager, settings_row, line):
    settings_row.registration_messages = [{"type": "text", "text": "ようこそ"}]
    settings_row.save()

    response = as_manager.post(settings_url(settings_row), settings_form(settings_row))

    assert response.status_code == 302
    settings_row.refresh_from_db()
    assert settings_row.registration_messages == []
    assert "返信しません" in as_manager.get(settings_url(settings_row)).content.decode()


def test_the_settings_page_says_when_line_cannot_list_the_coupons(as_manager, settings_row, line):
    line.fail_next(500, path_prefix="/v2/bot/coupon")

    response = as_manager.get(settings_url(settings_row))

    assert response.status_code == 200
    assert "LINE からクーポンを読めませんでした" in response.content.decode()


def test_the_replys_image_loads_at_once_only_from_a_host_the_tenant_allows(as_manager, settings_row):
    settings_row.registration_messages = [
        {"type": "image", "originalContentUrl": IMAGE, "previewImageUrl": IMAGE}
    ]
    settings_row.save()

    held = as_manager.get(settings_url(settings_row)).content.decode()
    settings_row.tenant.preview_image_hosts = "example.jp"
    settings_row.tenant.save()
    shown = as_manager.get(settings_url(settings_row)).content.decode()

    assert f'data-src="{IMAGE}"' in held and f'<img src="{IMAGE}"' not in held
    assert f'<img src="{IMAGE}"' in shown
