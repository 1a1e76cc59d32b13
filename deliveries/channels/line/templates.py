"""LINE's template rules: fill a template's messages and check them against LINE's limits
(line/messages.py).

A LINE template is a JSON array of 1–5 LINE message objects whose strings may hold
`{{ variable }}` placeholders (seed 001: テンプレ `announce_open@<commit>`, 文面 / 変数,
添付); resolving and importing are deliveries/channels/template_store.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from backlog_bridge.body.task import Attachment
from deliveries.channels.placeholders import RenderError, placeholders_fill, with_samples
from line.messages import validate_line_messages

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
SAMPLE_URL = "https://example.com/sample.png"


def template_problems(messages: object) -> list[str]:
    """What is wrong with a template file being imported (placeholders stand for samples)."""
    return validate_line_messages(with_samples(messages, url=SAMPLE_URL))


def render_messages(
    *, messages: list[dict], variables: dict[str, str], attachments: Iterable[Attachment] = ()
) -> list[dict]:
    """A filled copy of `messages` plus one image message per https image 添付.

    Raises RenderError naming every missing variable, every http image URL and
    every LINE limit the result breaks.
    """
    rendered, missing = placeholders_fill(messages, variables)
    images, problems = _attachment_images(attachments)
    problems = missing + problems
    if problems:
        raise RenderError(problems)
    result = rendered + images if isinstance(rendered, list) else rendered
    if problems := validate_line_messages(result):
        raise RenderError(problems)
    return result


def _attachment_images(attachments: Iterable[Attachment]) -> tuple[list[dict], list[str]]:
    """Image messages for 添付 image URLs; file names and なし are not sendable and are skipped."""
    images: list[dict] = []
    problems: list[str] = []
    for attachment in attachments:
        url = attachment.value.strip()
        if not _is_image_url(url):
            continue
        if urlsplit(url).scheme.lower() == "https":
            images.append({"type": "image", "originalContentUrl": url, "previewImageUrl": url})
        else:
            problems.append(
                f"添付「{attachment.kind}: {url}」の画像 URL は https で始まる必要があります（LINE は https の画像しか送れません）。"
            )
    return images, problems


def _is_image_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:  # an unbalanced [ in the host: no URL at all
        return False
    return (
        parts.scheme.lower() in ("http", "https")
        and bool(parts.netloc)
        and parts.path.lower().endswith(IMAGE_SUFFIXES)
    )
