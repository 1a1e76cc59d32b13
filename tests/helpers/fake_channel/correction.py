"""The fake channel takes no correction."""

from __future__ import annotations

from deliveries.channels.corrections import CorrectionResult
from deliveries.models import ContentTask

CORRECTS = False


def correction_send(*, task: ContentTask, text: str, by: str) -> CorrectionResult:
    return CorrectionResult(False, "Fake には訂正を送れません。")
