"""The fake Instagram, TikTok and HubSpot behave as channels.md describes (plain httpx, no Django)."""

from __future__ import annotations

import httpx
import pytest

from sandbox.hubspot import FakeHubSpot
from sandbox.instagram import FakeInstagram
from sandbox.tiktok import FakeTikTok


@pytest.fixture
def ig():
    with FakeInstagram(tokens={"t"}) as fake:
        yield (
            fake,
            httpx.Client(
                base_url=f"{fake.base_url}/v25.0/{fake.ig_user_id}", headers={"Authorization": "Bearer t"}
            ),
        )


def test_instagram_publishes_a_finished_container_once(ig):
    fake, client = ig
    fake.processing_polls = 1
    container = client.post("/media", json={"image_url": "https://x/y.jpg", "caption": "c"}).json()["id"]

    early = client.post("/media_publish", json={"creation_id": container})
    assert early.json()["error"]["code"] == 9007 and early.json()["error"]["error_subcode"] == 2207027
    assert client.get(f"{fake.base_url}/v25.0/{container}").json()["status_code"] == "IN_PROGRESS"
    assert client.get(f"{fake.base_url}/v25.0/{container}").json()["status_code"] == "FINISHED"
    assert client.post("/media_publish", json={"creation_id": container}).status_code == 200
    again = client.post("/media_publish", json={"creation_id": container})

    assert again.status_code == 400 and fake.double_publishes == 1 and len(fake.published()) == 1
    assert client.get(f"{fake.base_url}/v25.0/{container}").json()["status_code"] == "PUBLISHED"


def test_instagram_processes_a_container_for_processing_seconds_on_its_clock(ig):
    fake, client = ig
    now = [1000.0]
    fake.clock = lambda: now[0]
    fake.processing_seconds = 8.0
    container = client.post("/media", json={"image_url": "https://x/y.jpg", "caption": "c"}).json()["id"]

    now[0] += 7.9
    assert client.get(f"{fake.base_url}/v25.0/{container}").json()["status_code"] == "IN_PROGRESS"
    assert client.post("/media_publish", json={"creation_id": container}).json()["error"]["code"] == 9007
    now[0] += 0.2
    assert client.get(f"{fake.base_url}/v25.0/{container}").json()["status_code"] == "FINISHED"


def test_instagram_drops_the_answer_of_a_publish_it_carried_out(ig):
    fake, client = ig
    container = client.post("/media", json={"image_url": "https://x/y.jpg"}).json()["id"]
    fake.fail_next(drop=True, path_prefix=f"/v25.0/{fake.ig_user_id}/media_publish")

    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/media_publish", json={"creation_id": container})

    assert len(fake.published()) == 1


def test_instagram_answers_190_for_an_unknown_token(ig):
    fake, _ = ig
    answer = httpx.get(
        f"{fake.base_url}/v25.0/{fake.ig_user_id}/content_publishing_limit",
        headers={"Authorization": "Bearer nope"},
    )

    assert answer.status_code == 400 and answer.json()["error"]["code"] == 190


def test_instagram_serves_insights_leaving_out_figures_it_has_not(ig):
    fake, client = ig
    container = client.post("/media", json={"image_url": "https://x/y.jpg"}).json()["id"]
    media_id = client.post("/media_publish", json={"creation_id": container}).json()["id"]
    fake.set_insights(media_id, shares=None)
    insights = f"{fake.base_url}/v25.0/{media_id}/insights"

    answer = client.get(insights, params={"metric": "views,shares,saved"}).json()
    deprecated = client.get(insights, params={"metric": "views,impressions"})
    reel_only = client.get(insights, params={"metric": "ig_reels_avg_watch_time"})

    assert [(row["name"], row["values"][0]["value"]) for row in answer["data"]] == [
        ("views", 1240),
        ("saved", 12),
    ]
    assert deprecated.status_code == 400 and deprecated.json()["error"]["code"] == 100
    assert reel_only.status_code == 400 and reel_only.json()["error"]["code"] == 100


def test_tiktok_answers_a_video_query_with_the_asked_fields_of_the_users_own_public_videos():
    with FakeTikTok() as fake:
        fake.add_account("o1", access_token="a", privacy_level_options=["PUBLIC_TO_EVERYONE"])
        fake.processing_fetches = 0
        client = httpx.Client(base_url=fake.base_url, headers={"Authorization": "Bearer a"})
        body = {
            "post_info": {"privacy_level": "PUBLIC_TO_EVERYONE"},
            "source_info": {"source": "PULL_FROM_URL", "video_url": "https://x/v.mp4"},
        }
        publish_id = client.post("/v2/post/publish/video/init/", json=body).json()["data"]["publish_id"]
        status = client.post("/v2/post/publish/status/fetch/", json={"publish_id": publish_id}).json()
        [post_id] = [str(i) for i in status["data"]["publicaly_available_post_id"]]

        answer = client.post(
            "/v2/video/query/",
            params={"fields": "id,view_count,like_count"},
            json={"filters": {"video_ids": [post_id, "123"]}},
        ).json()

        assert answer["error"]["code"] == "ok"
        assert answer["data"]["videos"] == [{"id": post_id, "view_count": 2310, "like_count": 154}]


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"image_url": "https://x/1.jpg", "is_ai_generated": "maybe"}, "must be a boolean"),
        (
            {"image_url": "https://x/1.jpg", "is_carousel_item": True, "is_ai_generated": True},
            "carousel container",
        ),
    ],
    ids=["not-boolean", "on-a-carousel-item"],
)
def test_instagram_checks_the_ai_info_label_as_the_changelog_describes_it(params, reason):
    with FakeInstagram() as fake:
        answer = httpx.post(
            f"{fake.base_url}/v25.0/{fake.ig_user_id}/media",
            headers={"Authorization": "Bearer t"},
            json=params,
        )

        assert answer.status_code == 400 and reason in answer.json()["error"]["message"]
        assert fake.containers == {}


def test_tiktok_creator_info_carries_the_creators_nickname_and_settings():
    with FakeTikTok() as fake:
        account = fake.add_account("o1", access_token="a")
        account.nickname, account.stitch_disabled = "山田", True
        answer = httpx.post(
            f"{fake.base_url}/v2/post/publish/creator_info/query/",
            headers={"Authorization": "Bearer a"},
            json={},
        ).json()["data"]

        assert (answer["creator_nickname"], answer["privacy_level_options"]) == ("山田", ["SELF_ONLY"])
        assert (answer["comment_disabled"], answer["duet_disabled"], answer["stitch_disabled"]) == (
            False,
            False,
            True,
        )


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        (
            "/v2/post/publish/content/init/",
            {"media_type": "PHOTO", "post_info": {"privacy_level": "SELF_ONLY", "title": "あ" * 91}},
            "post_info.title exceeds 90",
        ),
        (
            "/v2/post/publish/video/init/",
            {"post_info": {"privacy_level": "SELF_ONLY", "disable_duet": "yes"}},
            "post_info.disable_duet must be a boolean",
        ),
        (
            "/v2/post/publish/video/init/",
            {"post_info": {"privacy_level": "SELF_ONLY", "brand_content_toggle": 1}},
            "post_info.brand_content_toggle must be a boolean",
        ),
    ],
    ids=["photo-title-over-90", "duet-not-boolean", "brand-not-boolean"],
)
def test_tiktok_answers_invalid_params_for_a_post_info_the_references_refuse(path, body, reason):
    with FakeTikTok() as fake:
        fake.add_account("o1", access_token="a")
        source = (
            {"source": "PULL_FROM_URL", "photo_images": ["https://x/1.jpg"]}
            if "content" in path
            else {"source": "PULL_FROM_URL", "video_url": "https://x/v.mp4"}
        )
        answer = httpx.post(
            f"{fake.base_url}{path}",
            headers={"Authorization": "Bearer a"},
            json={**body, "source_info": source},
        )

        assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_params"
        assert reason in answer.json()["error"]["message"] and fake.inits() == []


def test_tiktok_rotates_refresh_tokens_and_refuses_the_old_one():
    with FakeTikTok() as fake:
        fake.add_account("o1", access_token="a", refresh_token="r0")
        form = {
            "client_key": "sandbox-client-key",
            "client_secret": "sandbox-client-secret",
            "grant_type": "refresh_token",
        }

        first = httpx.post(f"{fake.base_url}/v2/oauth/token/", data={**form, "refresh_token": "r0"}).json()
        stale = httpx.post(f"{fake.base_url}/v2/oauth/token/", data={**form, "refresh_token": "r0"})

        assert first["refresh_token"] != "r0" and first["expires_in"] == 86400
        assert stale.status_code == 400 and stale.json()["error"] == "invalid_grant"


def test_tiktok_limits_init_to_six_a_minute_per_token():
    with FakeTikTok() as fake:
        fake.add_account("o1", access_token="a")
        fake.accounts["o1"].daily_cap = 100
        body = {
            "post_info": {"privacy_level": "SELF_ONLY"},
            "source_info": {"source": "PULL_FROM_URL", "video_url": "https://x/v.mp4"},
        }
        client = httpx.Client(base_url=fake.base_url, headers={"Authorization": "Bearer a"})

        answers = [client.post("/v2/post/publish/video/init/", json=body) for _ in range(7)]

        assert [a.status_code for a in answers] == [200] * 6 + [429]
        assert (
            answers[0].json()["error"]["code"] == "ok"
            and answers[6].json()["error"]["code"] == "rate_limit_exceeded"
        )


def test_hubspot_sends_one_email_per_send_id_and_reports_rate_headers():
    with FakeHubSpot(burst=3) as fake:
        client = httpx.Client(base_url=fake.base_url, headers={"Authorization": "Bearer any"})
        body = {
            "emailId": 1,
            "message": {"to": "a@example.jp", "sendId": "s1"},
            "contactProperties": {},
            "customProperties": {},
        }

        first = client.post("/marketing/v4/email/single-send", json=body)
        repeat = client.post("/marketing/v4/email/single-send", json=body)
        limited = [client.get("/crm/v3/objects/contacts") for _ in range(2)][-1]

        assert first.json()["status"] == "PENDING" and repeat.json()["sendResult"] == "IDEMPOTENT_IGNORE"
        assert len(fake.outbox) == 1
        assert repeat.headers["X-HubSpot-RateLimit-Remaining"] == "1"
        assert limited.status_code == 429 and limited.json()["category"] == "RATE_LIMITS"


def test_hubspot_answers_401_for_a_revoked_token():
    with FakeHubSpot(tokens={"t"}) as fake:
        fake.revoke("t")
        answer = httpx.get(f"{fake.base_url}/crm/v3/objects/contacts", headers={"Authorization": "Bearer t"})

        assert answer.status_code == 401 and answer.json()["category"] == "INVALID_AUTHENTICATION"


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/crm/v3/objects/notes", {"properties": {"hs_timestamp": "2026-12-10T01:00:00Z"}}, "`associations`"),
        ("/crm/v3/objects/notes", {"properties": {"hs_timestamp": 1}, "associations": []}, "`properties`"),
        (
            "/marketing/v4/email/single-send",
            {"emailId": 1, "message": {"to": "a@example.jp"}},
            "contactProperties",
        ),
        (
            "/marketing/v4/email/single-send",
            {"emailId": 1, "message": {"to": "a@example.jp", "replyTo": "b@example.jp"}},
            "`message.replyTo`",
        ),
        (
            "/marketing/v4/email/single-send",
            {
                "emailId": 1,
                "message": {"to": "a@example.jp"},
                "contactProperties": {},
                "customProperties": {"x": [1]},
            },
            "arrays",
        ),
    ],
    ids=[
        "note-without-associations",
        "note-property-not-a-string",
        "send-without-contact-properties",
        "send-reply-to-not-a-list",
        "send-custom-array",
    ],
)
def test_hubspot_answers_400_for_a_body_its_openapi_refuses(path, body, reason):
    with FakeHubSpot() as fake:
        answer = httpx.post(f"{fake.base_url}{path}", json=body, headers={"Authorization": "Bearer any"})

        assert answer.status_code == 400 and answer.json()["category"] == "VALIDATION_ERROR"
        assert reason in answer.json()["message"]
        assert fake.notes == {} and fake.outbox == {}


def test_hubspot_refuses_a_note_without_a_property_the_portal_requires():
    with FakeHubSpot() as fake:
        fake.required_note_properties = {"hubspot_owner_id"}
        body = {
            "properties": {"hs_timestamp": "2026-12-10T01:00:00Z", "hs_note_body": "x"},
            "associations": [],
        }
        answer = httpx.post(
            f"{fake.base_url}/crm/v3/objects/notes", json=body, headers={"Authorization": "Bearer a"}
        )

        assert answer.status_code == 400 and answer.json()["category"] == "VALIDATION_ERROR"
        assert "hubspot_owner_id" in answer.json()["message"] and fake.notes == {}
