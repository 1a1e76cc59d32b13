"""Hypothesis strategies drawing JSON values from a JSON Schema: the keywords the published
API schema uses (type, enum, required, properties, additionalProperties, oneOf, allOf,
pattern, lengths, minimum, items). A schema-driven fuzzer of our own: hypothesis-jsonschema
relies on Hypothesis internals that newer Hypothesis no longer has."""

from __future__ import annotations

import re

from hypothesis import strategies as st

# Any text but NUL: the API refuses it (PostgreSQL cannot store it), as its 400 answer says;
# nor a lone surrogate (UTF-8 cannot encode it).
CHARACTERS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(CHARACTERS, max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(CHARACTERS, max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def from_schema(schema: dict) -> st.SearchStrategy:
    if "oneOf" in schema:
        base = {k: v for k, v in schema.items() if k != "oneOf"}
        return st.one_of([from_schema(_merged(base, branch)) for branch in schema["oneOf"]])
    if "allOf" in schema:
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = _merged(merged, part)
        return from_schema(merged)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return _string(schema)
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
    if kind == "number":
        return st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    if kind == "array":
        items = from_schema(schema.get("items", {}))
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=schema.get("maxItems", 4))
    if kind == "object":
        return _object(schema)
    return ANY_JSON


def _merged(base: dict, extra: dict) -> dict:
    merged = {**base, **{k: v for k, v in extra.items() if k not in ("properties", "required", "pattern")}}
    merged["properties"] = {**base.get("properties", {}), **extra.get("properties", {})}
    merged["required"] = list(dict.fromkeys([*base.get("required", []), *extra.get("required", [])]))
    merged["patterns"] = [*base.get("patterns", []), *_patterns(base), *_patterns(extra)]
    return merged


def _patterns(schema: dict) -> list[str]:
    return [schema["pattern"]] if "pattern" in schema else []


def _string(schema: dict) -> st.SearchStrategy:
    patterns = list(dict.fromkeys([*schema.get("patterns", []), *_patterns(schema)]))
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    base = (
        st.from_regex(patterns[0], alphabet=CHARACTERS)
        if patterns
        else st.text(CHARACTERS, min_size=low, max_size=high)
    )
    return base.filter(
        lambda s: (
            low <= len(s) and (high is None or len(s) <= high) and all(re.search(p, s) for p in patterns)
        )
    )


def _object(schema: dict) -> st.SearchStrategy:
    properties = schema.get("properties", {})
    required = {name: from_schema(properties.get(name, {})) for name in schema.get("required", [])}
    optional = {name: from_schema(s) for name, s in properties.items() if name not in required}
    fixed = st.fixed_dictionaries(required, optional=optional)
    extra = schema.get("additionalProperties")
    if not isinstance(extra, dict):
        return fixed
    more = st.dictionaries(st.text(CHARACTERS, min_size=1, max_size=8), from_schema(extra), max_size=3)
    return st.tuples(more, fixed).map(lambda pair: {**pair[0], **pair[1]})
