"""A test send's messages: marked as a test, at most five, other platforms' posts as text."""

from __future__ import annotations

from line.direct import marked_as_test


def test_it_marks_the_first_text():
    marked = marked_as_test([{"type": "text", "text": "本文"}, {"type": "image"}], note="ACME-1")

    assert marked == [{"type": "text", "text": "【テスト配信】ACME-1\n本文"}, {"type": "image"}]


def test_it_puts_the_mark_first_when_the_first_message_is_no_text():
    marked = marked_as_test([{"type": "image"}] * 5, note="ACME-1")

    assert marked[0] == {"type": "text", "text": "【テスト配信】ACME-1"}
    assert len(marked) == 5  # LINE takes five messages a push


def test_it_sends_another_platforms_post_as_its_description():
    post = {"type": "instagram:feed", "altText": "Instagram フィード投稿: 冬のお知らせ", "content": {}}

    assert marked_as_test([post], note="ACME-2") == [
        {"type": "text", "text": "【テスト配信】ACME-2\nInstagram フィード投稿: 冬のお知らせ"}
    ]
