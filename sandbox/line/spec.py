"""LINE's published OpenAPI spec as the fake's validator (the validate endpoints), and as the
contract tests' (tests/contracts/openapi.py imports it from here: one copy of the rules).

The spec (line/line-openapi `messaging-api.yml`, kept in tests/contracts/line-openapi/ with
its upstream commit in SOURCE.txt) is OpenAPI 3.0: JSON Schema draft 4 plus `discriminator`,
which plain JSON Schema ignores: `Message` only requires `type`, so without it a text
message without `text` would pass. `discriminator` is added as a keyword that validates the
object against the schema its mapping names. The mapped schemas inherit from the base with
`allOf: [$ref base]`; that inner reference is pointed at a copy of the base without the
discriminator, as OpenAPI means it, which also ends the recursion.

Errors become LINE's `details` (`{"property": "messages[0].text", "message": ...}`); the
texts are the fake's, in LINE's style (clients match on status and property, not text).
jsonschema is a test dependency (installed by `make run` too); without it, or without the
spec file, `spec_errors` reports nothing and the fake's own checks (validation.py) stand alone.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

SPEC_DIR = Path(__file__).resolve().parents[2] / "tests" / "contracts" / "line-openapi"
SCHEMAS = "#/components/schemas/"
SPEC_URI = "urn:line-openapi:messaging-api"
BASE_SUFFIX = "__base"


def spec_load(path: Path) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(encoding="utf-8"), Loader=loader)


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


def openapi30_validator_class():
    """Draft 4 plus OpenAPI's `discriminator` keyword."""
    from jsonschema import Draft4Validator, ValidationError, validators

    def discriminator(validator, value: dict, instance: Any, schema: dict) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object") or value["propertyName"] not in instance:
            return  # `type` / `required` report these
        kind = instance[value["propertyName"]]
        mapping = value.get("mapping", {})
        if kind not in mapping:
            yield ValidationError(
                f"{kind!r} is not one of the mapped {value['propertyName']}s {sorted(mapping)}",
                validator="discriminator",
                validator_value=value,
                path=[value["propertyName"]],
            )
            return
        yield from validator.descend(instance, {"$ref": mapping[kind]})

    return validators.extend(Draft4Validator, {"discriminator": discriminator})


@functools.cache
def _registry():
    """The spec, loaded once per process (the YAML is large: every schema shares this copy)."""
    try:
        from jsonschema.validators import Draft4Validator  # noqa: F401
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT4
    except ImportError:
        return None
    path = SPEC_DIR / "messaging-api.yml"
    if not path.is_file():
        return None
    resource = Resource.from_contents(with_discriminator_bases(spec_load(path)), default_specification=DRAFT4)
    return Registry().with_resource(SPEC_URI, resource)


@functools.cache
def _validator(schema_name: str):
    registry = _registry()
    if registry is None:
        return None
    return openapi30_validator_class()({"$ref": f"{SPEC_URI}{SCHEMAS}{schema_name}"}, registry=registry)


WARMED = ("ValidateMessageRequest", "CouponCreateRequest", "NarrowcastRequest")


def spec_warm() -> None:
    """Load the spec now (~0.2 s, once per process): a fake that started serving must not make
    its first validate or coupon call wait past a client's timeout."""
    for schema_name in WARMED:
        spec_errors({}, schema_name)  # resolving the first reference is part of the cost


def spec_errors(body: Any, schema_name: str = "ValidateMessageRequest") -> list[tuple[str, str]]:
    """(property, message) for every way `body` breaks the spec's schema; [] when it does not
    (or when the spec cannot be loaded here)."""
    validator = _validator(schema_name)
    if validator is None:
        return []
    found: list[tuple[str, str]] = []
    for error in validator.iter_errors(body):
        found += _details(error)
    return list(dict.fromkeys(found))


def _property(path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


TYPE_NAMES = {"string": "a string", "array": "an array", "object": "an object", "integer": "an integer"}


def _details(error) -> list[tuple[str, str]]:
    where, kind, value, schema = (
        _property(error.absolute_path),
        error.validator,
        error.validator_value,
        error.schema,
    )
    if kind == "required":
        missing = [n for n in value if isinstance(error.instance, dict) and n not in error.instance]
        return [(f"{where}.{name}" if where else name, "May not be empty") for name in missing]
    if kind in ("minItems", "maxItems"):
        return [
            (where, f"Size must be between {schema.get('minItems', 0)} and {schema.get('maxItems', '∞')}")
        ]
    if kind in ("minLength", "maxLength"):
        return [
            (where, f"Length must be between {schema.get('minLength', 0)} and {schema.get('maxLength', '∞')}")
        ]
    if kind == "enum":
        return [(where, f"Must be one of the following values: [{', '.join(map(str, value))}]")]
    if kind == "discriminator":
        return [(where, f"Must be one of the following values: [{', '.join(value.get('mapping', {}))}]")]
    if kind == "type":
        return [(where, f"Must be {TYPE_NAMES.get(value, f'a {value}')}")]
    if kind == "pattern":
        return [(where, f'Must match "{value}"')]
    if kind in ("minimum", "maximum"):
        word = "greater" if kind == "minimum" else "less"
        return [(where, f"Must be {word} than or equal to {value}")]
    return [(where, error.message)]
