"""Comment commands: `/automedia send|preview|cancel|status|correct` in Backlog comments (seed 000).

Only lines that start with `/automedia` count, outside code blocks and quotes, so a
command quoted from an earlier comment never runs again. `correct` takes no arguments: its
text is the comment's `## 訂正` section, carried as the command's `text`. Each command of a comment
runs at most once (CommandRun is unique per comment and verb), and automedia's own
comments never run anything.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

PREFIX = "/automedia"
VERBS = {
    "send": {"template", "audience"},
    "preview": set(),
    "cancel": set(),
    "status": set(),
    "correct": set(),
}
CORRECTION_HEADING = "訂正"
USAGE = (
    "使い方:\n"
    "- /automedia send template=<テンプレ名[@rev]> [audience=<対象タグ>]  … 今すぐ（5 秒後に）配信\n"
    "- /automedia preview  … 送信内容のプレビュー\n"
    "- /automedia cancel   … 配信予約の取り消し\n"
    "- /automedia status   … 状態の確認\n"
    "- /automedia correct  … 配信済みの LINE メッセージへの訂正を、同じ宛先に送信（本文は ## 訂正 の下）"
)

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_BACKLOG_BLOCKS = re.compile(r"\{(code|quote)\}.*?(?:\{/\1\}|\Z)", re.S | re.I)
_ARG = re.compile(r"(\w+)=")
_HEADING = re.compile(r"^#{1,6}\s*(.*?)\s*$")


@dataclass(frozen=True)
class Command:
    verb: str
    args: tuple[tuple[str, str], ...] = ()

    @property
    def kwargs(self) -> dict[str, str]:
        return dict(self.args)


@dataclass
class Parsed:
    commands: list[Command] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.commands and not self.problems


def commands_parse(text: str | None) -> Parsed:
    """Every `/automedia …` line outside code blocks and quotes, deduplicated, in order."""
    parsed = Parsed()
    for line in _command_lines(text or ""):
        command, problem = _parse_line(line)
        if problem:
            parsed.problems.append(problem)
        elif command not in parsed.commands:
            parsed.commands.append(command)
    parsed.commands = [
        Command("correct", (("text", correction_section(text)),)) if c.verb == "correct" else c
        for c in parsed.commands
    ]
    sends = [c for c in parsed.commands if c.verb == "send"]
    if len(sends) > 1:
        parsed.commands = [c for c in parsed.commands if c.verb != "send" or c is sends[0]]
        parsed.problems.append("send は 1 つのコメントで 1 回までです。最初の send だけを実行します。")
    return parsed


def correction_section(text: str | None) -> str:
    """The text under the comment's `## 訂正` heading, up to the next heading; command lines
    are left out. "" when there is no such section."""
    lines, inside = [], False
    for raw in (text or "").replace("\r\n", "\n").split("\n"):
        heading = _HEADING.match(raw.strip())
        if heading:
            inside = heading.group(1) == CORRECTION_HEADING
        elif inside and not raw.strip().startswith(PREFIX):
            lines.append(raw.rstrip())
    return "\n".join(lines).strip()


def _command_lines(text: str) -> list[str]:
    text = _BACKLOG_BLOCKS.sub("", _FENCE.sub("", text.replace("\r\n", "\n")))
    lines = []
    for raw in text.split("\n"):
        line = raw.strip()
        if line.startswith((">", "＞")):  # quoted from an earlier comment
            continue
        if line == PREFIX or line.startswith(PREFIX + " ") or line.startswith(PREFIX + "\u3000"):
            lines.append(line)
    return lines


def _parse_line(line: str) -> tuple[Command | None, str]:
    words = line[len(PREFIX) :].strip()
    verb, _, rest = words.partition(" ")
    verb = verb.strip().lower()
    if not verb:
        return None, f"コマンドがありません: 「{line}」"
    if verb not in VERBS:
        return None, f"知らないコマンドです: 「{verb}」"
    try:
        args = _parse_args(rest.strip())
    except ValueError as exc:
        return None, f"{verb}: {exc}"
    unknown = sorted(set(args) - VERBS[verb])
    if unknown:
        return None, f"{verb}: 使えない引数です: {', '.join(unknown)}"
    if verb == "send" and not args.get("template"):
        return None, "send: template=<テンプレ名> が必要です"
    return Command(verb, tuple(sorted(args.items()))), ""


def _parse_args(text: str) -> dict[str, str]:
    """`key=value` pairs; a value runs to the next ` key=` (so `audience=tag:a, !tag:b` works)."""
    if not text:
        return {}
    starts = [m for m in _ARG.finditer(text) if m.start() == 0 or text[m.start() - 1] in " \u3000"]
    if not starts or starts[0].start() != 0:
        raise ValueError(f"引数は key=value の形で書いてください: 「{text}」")
    args: dict[str, str] = {}
    for match, following in zip(starts, [*starts[1:], None], strict=True):
        end = following.start() if following else len(text)
        value = text[match.end() : end].strip()
        if value[:1] in "\"'":
            value = " ".join(shlex.split(value))
        if not value:
            raise ValueError(f"{match.group(1)} の値がありません")
        if match.group(1) in args:
            raise ValueError(f"{match.group(1)} が 2 回指定されています")
        args[match.group(1)] = value
    return args
