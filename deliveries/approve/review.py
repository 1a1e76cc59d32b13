"""Advisory AI review of a preview (anthropic SDK). Bounded in time; never fails a preview."""

from __future__ import annotations

import json
import logging
import time
from datetime import datetime

import anthropic
from django.conf import settings

from backlog_bridge.models import AIReview
from core.timeutil import fmt_jst

logger = logging.getLogger(__name__)

SYSTEM = (
    "あなたは芸能・メディア事務所の広報チェック担当です。これから LINE で配信するメッセージを確認し、"
    "日本語で短く（箇条書き 5 点以内）指摘してください。観点: タレントや取引先も読む前提での言葉づかい・トーン、"
    "誤字脱字、投稿日時と矛盾する日付・時刻、誇大・断定的な表現や炎上しそうな表現。問題がなければ「特になし」と書いてください。"
)


def review_messages(
    *, tenant, issue_key: str, messages: list[dict], publish_at: datetime | None
) -> AIReview | None:
    """Ask Claude for a review; None when no API key is configured. Always records the outcome."""
    if not settings.ANTHROPIC_API_KEY:
        return None
    started = time.perf_counter()
    review = AIReview(tenant=tenant, issue_key=issue_key, model=settings.ANTHROPIC_MODEL)
    try:
        response = _client().messages.create(
            model=settings.ANTHROPIC_MODEL,
            max_tokens=800,
            system=SYSTEM,
            messages=[{"role": "user", "content": _prompt(messages, publish_at)}],
        )
        review.text = "".join(b.text for b in response.content if getattr(b, "type", "") == "text").strip()
        review.input_tokens = response.usage.input_tokens or 0
        review.output_tokens = response.usage.output_tokens or 0
        review.ok = bool(review.text)
    except anthropic.APIError as exc:  # timeouts, connection errors and HTTP errors alike
        review.error = f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"[:500]
        logger.warning("AI review for %s failed: %s", issue_key, review.error)
    review.duration_ms = int((time.perf_counter() - started) * 1000)
    review.save()
    return review


def _client() -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL,
        timeout=settings.AI_REVIEW_TIMEOUT_SECONDS,
        max_retries=0,  # the bound is the bound: a slow API must not hold the preview
    )


def _prompt(messages: list[dict], publish_at: datetime | None) -> str:
    when = fmt_jst(publish_at) if publish_at else "未設定"
    body = json.dumps(messages, ensure_ascii=False, indent=2)
    return f"投稿日時: {when}\n配信するメッセージ（LINE Messaging API のメッセージオブジェクト）:\n{body}"
