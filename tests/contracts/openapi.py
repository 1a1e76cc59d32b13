"""LINE's published OpenAPI specs (kept in this folder, see SOURCE.txt) as JSON Schema validators.

The specs are OpenAPI 3.0 (JSON Schema draft 4 plus `discriminator`); the validator class
that understands `discriminator` is sandbox/line/spec.py's, which the fake LINE's validate
endpoints use too, so the fake and the contract tests judge a message by the same rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sandbox.line.spec import SCHEMAS, openapi30_validator_class, with_discriminator_bases

__all__ = ["SCHEMAS", "OpenApi30Validator", "load_spec", "with_discriminator_bases"]

LINE_OPENAPI_DIR = Path(__file__).resolve().parent / "line-openapi"


def load_spec(name: str) -> dict:
    """One of the specs of this folder, or a failure (never a skip): without it the contract is unchecked."""
    path = LINE_OPENAPI_DIR / name
    if not path.is_file():
        pytest.fail(f"LINE's OpenAPI spec {path} is missing from the repository", pytrace=False)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


OpenApi30Validator = openapi30_validator_class()
