"""LINE's published OpenAPI specs (kept in this folder, see SOURCE.txt) as JSON Schema validators.

The specs are OpenAPI 3.0: JSON Schema draft 4 plus OpenAPI's `discriminator`, which
plain JSON Schema ignores: `Message` only requires `type`, so without it a text message
without `text` would pass. `discriminator` is added as a keyword that validates the
object against the schema its mapping names. The mapped schemas inherit from the base
with `allOf: [$ref base]`; that inner reference is pointed at a copy of the base without
the discriminator, as OpenAPI means it, which also ends the recursion.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft4Validator, ValidationError, validators

LINE_OPENAPI_DIR = Path(__file__).resolve().parent / "line-openapi"
SCHEMAS = "#/components/schemas/"
BASE_SUFFIX = "__base"


def load_spec(name: str) -> dict:
    """One of the specs of this folder, or a failure (never a skip): without it the contract is unchecked."""
    path = LINE_OPENAPI_DIR / name
    if not path.is_file():
        pytest.fail(f"LINE's OpenAPI spec {path} is missing from the repository", pytrace=False)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


def _discriminator(validator, discriminator: dict, instance: Any, schema: dict) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object") or discriminator["propertyName"] not in instance:
        return  # `type` / `required` report these
    value = instance[discriminator["propertyName"]]
    mapping = discriminator.get("mapping", {})
    if value not in mapping:
        yield ValidationError(
            f"{value!r} is not one of the mapped {discriminator['propertyName']}s {sorted(mapping)}"
        )
        return
    yield from validator.descend(instance, {"$ref": mapping[value]})


OpenApi30Validator = validators.extend(Draft4Validator, {"discriminator": _discriminator})


def with_discriminator_bases(spec: dict) -> dict:
    spec = copy.deepcopy(spec)
    schemas = spec["components"]["schemas"]
    for name, schema in list(schemas.items()):
        if "discriminator" not in schema:
            continue
        schemas[name + BASE_SUFFIX] = {k: v for k, v in schema.items() if k != "discriminator"}
        base_ref = {"$ref": SCHEMAS + name}
        for target in schema["discriminator"].get("mapping", {}).values():
            subtype = schemas[target.removeprefix(SCHEMAS)]
            subtype["allOf"] = [
                {"$ref": SCHEMAS + name + BASE_SUFFIX} if part == base_ref else part
                for part in subtype.get("allOf", [])
            ]
    return spec
