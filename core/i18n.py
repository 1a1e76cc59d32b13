"""What automedia writes for people outside the admin stays Japanese.

Model labels are translated for the admin (English when the browser asks), but a label
that goes into a stored error, a Backlog comment or a LINE message is read in Japanese
whatever language the current request speaks (those readers are Japanese).
"""

from __future__ import annotations

from django.utils import translation


def japanese(text: object) -> str:
    with translation.override("ja"):
        return str(text)
