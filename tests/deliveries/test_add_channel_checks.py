"""`manage.py add_channel` checks the token and the account before it saves, with the smallest
documented call of each platform (respx: the exact request), and refuses naming the fix."""

from __future__ import annotations

from io import StringIO

import httpx
import pytest
import respx
from django.core.management import CommandError, call_command

from core.models import Connection
from deliveries.channels.models import ChannelAccount
from tests.helpers.factories import TenantFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("httpx_engine")]

IG = "https://graph.instagram.com/v25.0"
TT = "https://open.tiktokapis.com"
HS = "https://api.hubapi.com"


@pytest.fixture
def acme():
    return TenantFactory(slug="acme")


def add(*args: str) -> str:
    out = StringIO()
    call_command("add_channel", "acme", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_it_reads_the_instagram_users_username_with_the_token(acme):
    with respx.mock(assert_all_called=True) as router:
        route = router.get(f"{IG}/1784100").respond(200, json={"id": "1784100", "username": "acme_official"})
        out = add("instagram", "--access-token=IG-TOKEN", "--ig-user-id=1784100")

    request = route.calls.last.request
    assert request.url.params["fields"] == "username"
    assert request.headers["Authorization"] == "Bearer IG-TOKEN"
    assert "接続確認 OK: Instagram アカウント: @acme_official" in out
    assert Connection.objects.get(tenant=acme, platform="instagram").ok


def test_it_refuses_an_instagram_user_id_the_token_does_not_reach(acme):
    error = {"error": {"message": "Unsupported get request.", "type": "GraphMethodException", "code": 100}}
    with respx.mock() as router:
        router.get(f"{IG}/999").respond(400, json=error)
        with pytest.raises(CommandError, match="Instagram ユーザーIDがこのトークンのアカウントではない"):
            add("instagram", "--access-token=IG-TOKEN", "--ig-user-id=999")

    assert not ChannelAccount.objects.exists()


def test_it_refuses_an_expired_instagram_token_naming_the_fix(acme):
    error = {"error": {"message": "Session has expired", "type": "OAuthException", "code": 190}}
    with respx.mock() as router:
        router.get(f"{IG}/1784100").respond(400, json=error)
        with pytest.raises(
            CommandError, match="トークンを受け付けません.*manage.py add_channel acme instagram"
        ):
            add("instagram", "--access-token=OLD", "--ig-user-id=1784100")


def test_it_asks_tiktok_for_the_creator_info(acme):
    data = {"creator_username": "acme.tt", "creator_nickname": "ACME", "privacy_level_options": ["SELF_ONLY"]}
    with respx.mock() as router:
        route = router.post(f"{TT}/v2/post/publish/creator_info/query/").respond(
            200, json={"data": data, "error": {"code": "ok", "message": "", "log_id": "x"}}
        )
        out = add("tiktok", "--access-token=TT-TOKEN", "--open-id=open-1", "--expires-in=86400")

    assert route.calls.last.request.headers["Authorization"] == "Bearer TT-TOKEN"
    assert "TikTok アカウント: @acme.tt（ACME）" in out


def test_it_refuses_a_tiktok_token_tiktok_rejects(acme):
    body = {"data": {}, "error": {"code": "access_token_invalid", "message": "invalid", "log_id": "x"}}
    with respx.mock() as router:
        router.post(f"{TT}/v2/post/publish/creator_info/query/").respond(401, json=body)
        with pytest.raises(CommandError, match="TikTok がトークンを受け付けません"):
            add("tiktok", "--access-token=BAD", "--open-id=open-1", "--expires-in=86400")


def test_it_reads_hubspots_account_details(acme):
    with respx.mock() as router:
        route = router.get(f"{HS}/account-info/v3/details").respond(
            200, json={"portalId": 4242, "accountType": "STANDARD", "timeZone": "Asia/Tokyo"}
        )
        out = add("hubspot", "--access-token=pat-1", "--mode=note")

    assert route.calls.last.request.headers["Authorization"] == "Bearer pat-1"
    assert "HubSpot アカウント: portal 4242（STANDARD）" in out


def test_it_refuses_a_revoked_hubspot_token(acme):
    body = {"status": "error", "message": "expired", "category": "EXPIRED_AUTHENTICATION"}
    with respx.mock() as router:
        router.get(f"{HS}/account-info/v3/details").respond(401, json=body)
        with pytest.raises(CommandError, match="HubSpot がトークンを受け付けません"):
            add("hubspot", "--access-token=pat-old", "--mode=note")


def test_no_check_saves_without_a_call_and_warns(acme):
    err = StringIO()
    with respx.mock(assert_all_called=False) as router:
        call_command(
            "add_channel",
            "acme",
            "hubspot",
            "--access-token=pat-1",
            "--no-check",
            stdout=StringIO(),
            stderr=err,
        )

    assert not router.calls and ChannelAccount.objects.filter(channel="hubspot").exists()
    assert "トークンを確認せずに保存します" in err.getvalue()


def test_a_platform_that_does_not_answer_is_not_taken_for_a_wrong_token(acme):
    with respx.mock() as router:
        router.get(f"{HS}/account-info/v3/details").mock(side_effect=httpx.ConnectError("down"))
        with pytest.raises(CommandError, match="HubSpot を確認できませんでした"):
            add("hubspot", "--access-token=pat-1")
