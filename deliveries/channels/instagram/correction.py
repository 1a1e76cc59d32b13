"""Instagram takes no correction from automedia: the answer says what a person can do there."""

from __future__ import annotations

from deliveries.channels.corrections import CorrectionResult, post_refusal
from deliveries.models import ContentTask

CORRECTS = False
# automedia's calls to Instagram neither take a post down nor edit it.
ANSWER = (
    "Instagram の投稿は API では取り下げ・訂正できません。"
    "Instagram アプリで投稿のキャプションを編集するか、投稿を削除してください。"
)


def correction_send(*, task: ContentTask, text: str, by: str) -> CorrectionResult:
    return post_refusal(task, ANSWER)
