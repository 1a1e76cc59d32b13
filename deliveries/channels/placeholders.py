"""`{{ variable }}` placeholders, shared by every channel's templates (deliveries/channels/<kind>/).

Below template_store.py, post_templates.py and every channel: it knows no channel and no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

# The same characters the issue parser accepts in a 文面 / 変数 key.
PLACEHOLDER = re.compile(r"\{\{\s*([\w.\-]+)\s*\}\}")
SAMPLE_TEXT = "x"


class RenderError(ValueError):
    """Every problem that stops a template from becoming sendable messages."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def substitute(value: Any, replace: Callable[[str], str]) -> Any:
    """A new structure with `replace` applied to every string value (never to keys)."""
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [substitute(item, replace) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, replace) for key, item in value.items()}
    return value


def missing_variable(name: str) -> str:
    return f"変数「{name}」がありません（「## 文面 / 変数」に - {name}: … を書いてください）。"


def placeholders_fill(value: Any, variables: dict[str, str]) -> tuple[Any, list[str]]:
    """A filled copy of `value` and the problem of each missing variable (once each)."""
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        if match[1] in variables:
            return str(variables[match[1]])
        missing.append(match[1])
        return match[0]

    filled = substitute(value, lambda text: PLACEHOLDER.sub(fill, text))
    return filled, [missing_variable(name) for name in dict.fromkeys(missing)]


def with_samples(value: Any, *, url: str) -> Any:
    """A copy to validate the structure of: a leading placeholder stands for `url`, others for text."""

    def sample(text: str) -> str:
        text = PLACEHOLDER.sub(url, text, count=1) if PLACEHOLDER.match(text) else text
        return PLACEHOLDER.sub(SAMPLE_TEXT, text)

    return substitute(value, sample)


def template_variables(messages: object) -> list[str]:
    """The placeholder names a template uses, in order of first appearance."""
    names: list[str] = []

    def collect(text: str) -> str:
        names.extend(PLACEHOLDER.findall(text))
        return text

    substitute(messages, collect)
    return list(dict.fromkeys(names))
