"""Secrets at rest: a model field that stores text encrypted with Fernet."""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models


@cache
def _fernet(key: str) -> Fernet:
    try:
        return Fernet(key.encode())
    except (ValueError, TypeError) as exc:
        raise ImproperlyConfigured("FIELD_ENCRYPTION_KEY is not a valid Fernet key") from exc


def encrypt(plaintext: str) -> str:
    return _fernet(settings.FIELD_ENCRYPTION_KEY).encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet(settings.FIELD_ENCRYPTION_KEY).decrypt(token.encode()).decode()
    except InvalidToken as exc:
        raise ImproperlyConfigured(
            "A stored secret cannot be decrypted: FIELD_ENCRYPTION_KEY changed?"
        ) from exc


def mask(secret: str) -> str:
    """What the admin and logs may show of a secret: its length and last 4 characters."""
    if not secret:
        return ""
    return f"{'•' * 8}{secret[-4:]}" if len(secret) > 8 else "•" * 8


class EncryptedTextField(models.TextField):
    """Text stored as a Fernet token; Python code only ever sees the plaintext."""

    def from_db_value(self, value, expression, connection):
        if value is None or value == "":
            return value
        return decrypt(value)

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if value is None or value == "":
            return value
        return encrypt(value)
