"""Audience tag expressions from a task's 対象タグ line (seed 001).

Grammar: terms separated by ``,`` are ANDed; literals inside a term separated by
``|`` are ORed; ``!`` negates a literal. Literals are ``tag:<name>`` (a contact's
tag) or ``group:<groupId>`` (a LINE group to push to).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TAG = "tag"
GROUP = "group"

_TAG_NAME = re.compile(r"[^\s,|!:]+")
_GROUP_ID = re.compile(r"[A-Za-z0-9_-]+")
# Managers type on a Japanese IME; full-width separators are what they mean by the ASCII ones.
_FULL_WIDTH = str.maketrans({"，": ",", "、": ",", "｜": "|", "！": "!", "：": ":"})
_EXAMPLE = "例: tag:active, !tag:opt_out"


class AudienceError(ValueError):
    """A 対象タグ expression that cannot be used; the message is for the manager."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(" ".join(self.problems))


@dataclass(frozen=True)
class Literal:
    kind: str
    value: str
    negated: bool = False

    def __str__(self) -> str:
        return f"{'!' if self.negated else ''}{self.kind}:{self.value}"

    def holds(self, tags: set[str]) -> bool:
        return (self.value in tags) != self.negated


@dataclass(frozen=True)
class Audience:
    terms: tuple[tuple[Literal, ...], ...]

    def __str__(self) -> str:
        return ", ".join("|".join(str(literal) for literal in term) for term in self.terms)

    def matches(self, tags: set[str]) -> bool:
        return all(_term_matches(term, tags) for term in self.terms)

    @property
    def literals(self) -> list[Literal]:
        return [literal for term in self.terms for literal in term]

    @property
    def groups(self) -> list[str]:
        found = [lit.value for lit in self.literals if lit.kind == GROUP and not lit.negated]
        return list(dict.fromkeys(found))

    @property
    def is_group_target(self) -> bool:
        return bool(self.terms) and all(lit.kind == GROUP for lit in self.literals)


def _term_matches(term: tuple[Literal, ...], tags: set[str]) -> bool:
    # Group literals choose where to push, not whom; they never filter contacts.
    tag_literals = [literal for literal in term if literal.kind == TAG]
    return not tag_literals or any(literal.holds(tags) for literal in tag_literals)


def parse_audience(text: str) -> Audience:
    source = str(text or "").translate(_FULL_WIDTH).strip()
    if not source:
        raise AudienceError([f"対象タグが空です（{_EXAMPLE}）。"])
    problems: list[str] = []
    terms = tuple(_parse_term(raw, problems) for raw in source.split(","))
    if not problems:
        problems.extend(_structure_problems(terms))
    if problems:
        raise AudienceError(problems)
    return Audience(terms=terms)


def _parse_term(raw: str, problems: list[str]) -> tuple[Literal, ...]:
    if not raw.strip():
        problems.append("「,」の前後に条件がありません（カンマが続いているか、先頭か末尾にあります）。")
        return ()
    literals = []
    for token in raw.split("|"):
        if not token.strip():
            problems.append(f"「{raw.strip()}」の「|」の前後に条件がありません。")
            continue
        literal = _parse_literal(token.strip(), problems)
        if literal is not None:
            literals.append(literal)
    return tuple(literals)


def _parse_literal(token: str, problems: list[str]) -> Literal | None:
    negated = token.startswith("!")
    body = token[1:].strip() if negated else token
    kind, colon, value = body.partition(":")
    kind, value = kind.strip().lower(), value.strip()
    problem = _literal_problem(token, kind, colon, value)
    if problem:
        problems.append(problem)
        return None
    return Literal(kind=kind, value=value, negated=negated)


def _literal_problem(token: str, kind: str, colon: str, value: str) -> str | None:
    if not colon or kind not in (TAG, GROUP):
        return f"「{token}」は tag:タグ名 か group:グループID の形で書いてください。"
    if kind == TAG and not value:
        return f"「{token}」にタグ名がありません。"
    if kind == TAG and not _TAG_NAME.fullmatch(value):
        return f"「{token}」のタグ名「{value}」に使えない文字があります（空白と , | ! : は使えません）。"
    if kind == GROUP and not value:
        return f"「{token}」にグループIDがありません。"
    if kind == GROUP and not _GROUP_ID.fullmatch(value):
        return f"「{token}」のグループID「{value}」に使えない文字があります（英数字・_・- のみ）。"
    return None


def _structure_problems(terms: tuple[tuple[Literal, ...], ...]) -> list[str]:
    literals = [literal for term in terms for literal in term]
    kinds = {literal.kind for literal in literals}
    problems = [
        f"「{literal}」: グループを除外する指定（!group:）はできません。"
        for literal in literals
        if literal.kind == GROUP and literal.negated
    ]
    if kinds == {TAG, GROUP}:
        problems.append(
            "group: と tag: を同じ式に混ぜることはできません（グループへの配信はタグで絞り込めません）。"
        )
    problems.extend(_contradictions(terms))
    return problems


def _contradictions(terms: tuple[tuple[Literal, ...], ...]) -> list[str]:
    required = {term[0] for term in terms if len(term) == 1 and term[0].kind == TAG}
    return [
        f"「{literal}」と「!{literal}」を同時に指定しているため、誰にも配信されません。"
        for literal in sorted(required, key=str)
        if not literal.negated and Literal(TAG, literal.value, negated=True) in required
    ]
