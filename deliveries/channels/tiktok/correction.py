"""TikTok takes no correction from automedia: the answer says what a person can do there."""

from __future__ import annotations

from deliveries.channels.corrections import CorrectionResult, post_refusal
from deliveries.models import ContentTask

CORRECTS = False
# automedia's calls to TikTok neither take a post down nor edit it.
ANSWER = (
    "TikTok の投稿は API では取り下げ・訂正できません。"
    "TikTok アプリで動画を削除するか、公開範囲を「自分のみ」に変更してください。"
)


def correction_send(*, task: ContentTask, text: str, by: str) -> CorrectionResult:
    return post_refusal(task, ANSWER)
