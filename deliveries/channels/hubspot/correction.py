"""HubSpot takes no correction from automedia: the answer says what a person can do there."""

from __future__ import annotations

from deliveries.channels.corrections import CorrectionResult, post_refusal
from deliveries.models import ContentTask

CORRECTS = False
# automedia's calls to HubSpot neither take a post down nor edit it.
ANSWER = (
    "送信済みの HubSpot メールは取り消せません（API でもアプリでも）。"
    "CRM のノートとして記録した配信は、HubSpot の画面で編集・削除してください。"
    "訂正のメールが必要なら、新しい課題として承認してください。"
)


def correction_send(*, task: ContentTask, text: str, by: str) -> CorrectionResult:
    return post_refusal(task, ANSWER)
