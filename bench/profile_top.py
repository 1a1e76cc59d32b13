"""Sum collapsed stacks (py-spy `--format raw`, e.g. from `bench/delivery.py --profile DIR`).

`.venv/bin/python bench/profile_top.py DIR/sqlite-deliverer.txt [--top 40] [--match deliveries/]`

Prints, per function (file:line-less name), the share of samples where it is on the stack
(inclusive) and where it is the innermost frame (self). Idle threads (waiting in a lock,
a sleep or a socket read) count as samples too: `--busy` drops stacks whose innermost
frame is a wait.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

WAITS = re.compile(
    r"^(wait|sleep|acquire|select|poll|_recv_into|recv_into|recv|accept|readinto|get|_worker)\b"
)


def frames(stack: str) -> list[str]:
    out = []
    for frame in stack.split(";"):
        name, _, where = frame.partition(" (")
        where = where.rstrip(")")
        path = where.rsplit(":", 1)[0]
        short = "/".join(path.split("/")[-2:])
        out.append(f"{name} ({short})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--match", default="", help="only functions whose file path contains this")
    parser.add_argument("--busy", action="store_true", help="leave out samples waiting (lock, sleep, socket)")
    args = parser.parse_args()
    inclusive, own, total = Counter(), Counter(), 0
    for path in args.files:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not stack or not count.isdigit():
                    continue
                names = frames(stack)
                if args.busy and WAITS.match(names[-1]):
                    continue
                n = int(count)
                total += n
                own[names[-1]] += n
                for name in set(names):
                    inclusive[name] += n
    print(f"{total} samples")
    for title, counter in (("inclusive", inclusive), ("self", own)):
        print(f"\n-- {title} --")
        shown = 0
        for name, n in counter.most_common():
            if args.match and args.match not in name:
                continue
            print(f"{100 * n / total:6.1f}%  {name}")
            shown += 1
            if shown >= args.top:
                break


if __name__ == "__main__":
    main()
