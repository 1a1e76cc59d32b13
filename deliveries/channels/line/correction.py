"""Corrections after a LINE delivery: LINE cannot recall a message, so a correction goes, in
the same chats, to exactly the recipients the delivery reached: one request per accepted
chunk of the delivery, of the same kind (push or multicast), to the targets of its attempt row.

A push quotes the original with its `quoteToken`; a multicast has none to quote, so it goes
unquoted and the reply says so. Each text is one `DeliveryCorrection`, sent once: every
chunk carries a retry key of its own, and a chunk already accepted is not sent again.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from core.timeutil import fmt_jst
from core.transport import SendResult, TransportError
from deliveries.channels.corrections import CorrectionResult
from deliveries.channels.line.publisher import attempt_answer
from deliveries.models import ContentTask, DeliveryAttempt, DeliveryCorrection
from line.messages import validate_line_messages
from line.transport import line_transport

CORRECTS = True
NOT_DELIVERED = "LINE で配信済みの課題ではないため、訂正を送れません（訂正は配信のあとに送るものです）。"


@dataclass(frozen=True)
class Chunk:
    """One request of the original delivery, as a correction repeats it."""

    number: int
    kind: str  # push | multicast
    to: str | list[str]
    quote_token: str

    @property
    def recipients(self) -> int:
        return 1 if isinstance(self.to, str) else len(self.to)


def correction_send(*, task: ContentTask, text: str, by: str) -> CorrectionResult:
    """Send `text` as a correction of the task's last LINE delivery (see the module doc)."""
    seq = _delivered_seq(task) if task.delivered_at is not None else None
    if seq is None:
        return CorrectionResult(False, NOT_DELIVERED)
    text = (text or "").strip()
    problems = _text_problems(text)
    if problems:
        return CorrectionResult(False, problems)
    chunks = _chunks(task, seq)
    if chunks is None:
        return CorrectionResult(False, "元の配信の宛先が記録されていないため、訂正を送れません。")
    correction = _correction(task, seq, text, by)
    if correction.sent_at is not None:
        return CorrectionResult(
            False, f"この訂正は {fmt_jst(correction.sent_at)} に送信済みです（もう一度は送りません）。"
        )
    return _send(task, correction, chunks)


def _text_problems(text: str) -> str:
    if not text:
        return (
            "訂正文がありません。コメントに「## 訂正」の見出しを書き、その下に訂正文を書いてください"
            "（例: /automedia correct の次の行に ## 訂正、その下に本文）。"
        )
    problems = validate_line_messages([{"type": "text", "text": text}])
    return "訂正文を送れません: " + " / ".join(problems) if problems else ""


def _delivered_seq(task: ContentTask) -> int | None:
    """The approval whose LINE delivery LINE accepted last."""
    return _originals(task).aggregate(seq=Max("approval_seq"))["seq"]


def _originals(task: ContentTask):
    return DeliveryAttempt.objects.filter(
        task=task, channel="line", correction__isnull=True, outcome__in=DeliveryAttempt.ACCEPTED
    )


def _chunks(task: ContentTask, seq: int) -> list[Chunk] | None:
    """The delivery's accepted chunks with their targets; None when one's targets are unknown
    (deliveries recorded before targets were kept, with more than one recipient)."""
    chunks: dict[int, Chunk] = {}
    for attempt in _originals(task).filter(approval_seq=seq).order_by("chunk", "created_at"):
        summary = attempt.request_summary or {}
        kind = summary.get("kind") or attempt.endpoint.rsplit("/", 1)[-1]
        to = summary.get("to") or ([summary["first"]] if summary.get("recipients") == 1 else None)
        if kind not in ("push", "multicast") or not to:
            return None
        # LINE returns a quoteToken for a push's messages only; a multicast answers `{}`
        # (messaging-api.yml `SentMessage.quoteToken`, `MulticastResponse`).
        quote = next((m["quoteToken"] for m in attempt.sent_messages if m.get("quoteToken")), "")
        chunks.setdefault(attempt.chunk, Chunk(attempt.chunk, kind, to[0] if kind == "push" else to, quote))
    return [chunks[n] for n in sorted(chunks)]


def _correction(task: ContentTask, seq: int, text: str, by: str) -> DeliveryCorrection:
    digest = hashlib.sha256(text.encode()).hexdigest()
    key = {"task": task, "approval_seq": seq, "text_hash": digest}
    found = DeliveryCorrection.objects.filter(**key).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():
            return DeliveryCorrection.objects.create(tenant=task.tenant, text=text, requested_by=by, **key)
    except IntegrityError:  # the same correction started at the same moment
        return DeliveryCorrection.objects.get(**key)


def correction_message(text: str, quote_token: str = "") -> dict:
    """A text message, quoting the original when LINE gave a quoteToken for it."""
    return {"type": "text", "text": text, **({"quoteToken": quote_token} if quote_token else {})}


def chunk_retry_key(correction: DeliveryCorrection, chunk: int) -> str:
    """The chunk's X-Line-Retry-Key, derived from the correction's stored key: a resend is
    answered 409 (https://developers.line.biz/en/docs/messaging-api/retrying-api-request/)."""
    return str(uuid.uuid5(correction.retry_key, f"chunk:{chunk}"))


def _send(task: ContentTask, correction: DeliveryCorrection, chunks: list[Chunk]) -> CorrectionResult:
    transport = line_transport(task.tenant.line_channel_token)
    done = set(
        correction.attempts.filter(outcome__in=DeliveryAttempt.ACCEPTED).values_list("chunk", flat=True)
    )
    for chunk in chunks:
        if chunk.number in done:
            continue
        message = correction_message(correction.text, chunk.quote_token if chunk.kind == "push" else "")
        key = chunk_retry_key(correction, chunk.number)
        try:
            if chunk.kind == "push":
                result = transport.push(to=chunk.to, messages=[message], retry_key=key)
            else:
                result = transport.multicast(to=chunk.to, messages=[message], retry_key=key)
        except TransportError as exc:
            _record(correction, chunk, key, message, error=exc)
            return CorrectionResult(False, _partial(chunks, done, exc))
        _record(correction, chunk, key, message, result=result)
        done.add(chunk.number)
    total = sum(c.recipients for c in chunks)
    DeliveryCorrection.objects.filter(pk=correction.pk).update(sent_at=timezone.now(), recipients=total)
    return CorrectionResult(True, _sent_text(chunks, total))


def _record(
    correction: DeliveryCorrection,
    chunk: Chunk,
    key: str,
    message: dict,
    *,
    result: SendResult | None = None,
    error: TransportError | None = None,
) -> None:
    to = [chunk.to] if isinstance(chunk.to, str) else list(chunk.to)
    DeliveryAttempt.objects.create(
        tenant=correction.tenant,
        task=correction.task,
        approval_seq=correction.approval_seq,
        chunk=chunk.number,
        channel="line",
        endpoint=f"/v2/bot/message/{chunk.kind}",
        retry_key=key,
        correction=correction,
        request_summary={
            "kind": chunk.kind,
            "recipients": len(to),
            "first": to[0],
            "to": to,
            "quoted": "quoteToken" in message,
        },
        **attempt_answer(result, error),
    )


def _sent_text(chunks: list[Chunk], total: int) -> str:
    pushes = [c for c in chunks if c.kind == "push"]
    quoted = sum(1 for c in pushes if c.quote_token)
    lines = [f"訂正を送信しました: 元の配信と同じ {total} 件の宛先へ。"]
    if quoted:
        lines.append(
            f"- 個別送信（push）{len(pushes)} 件のうち {quoted} 件は元のメッセージを引用しています。"
        )
    if len(pushes) > quoted:
        lines.append(
            f"- 個別送信 {len(pushes) - quoted} 件は引用できるメッセージがないため、引用なしで送りました。"
        )
    multicast = sum(c.recipients for c in chunks if c.kind == "multicast")
    if multicast:
        lines.append(
            f"- 一斉送信（multicast）の {multicast} 人には引用なしで送りました"
            "（LINE は multicast の送信結果に引用用の quoteToken を返しません）。"
        )
    return "\n".join(lines)


def _partial(chunks: list[Chunk], done: set[int], exc: TransportError) -> str:
    sent = sum(c.recipients for c in chunks if c.number in done)
    total = sum(c.recipients for c in chunks)
    return (
        f"訂正の送信に失敗しました（{sent} / {total} 件の宛先に送信済み）: {exc.message}\n"
        "同じ訂正文でもう一度実行すると、まだ届いていない宛先にだけ送ります。"
    )
