"""Checking and highlighting hostile lines: one line of 100 KB (and 1 MB) of a pattern.

Issue 46: the tokenizer tried a string at every quote of `"\\"\\"\\"...` and
scanned to the end of the line from each: `qvr check` of 40 KB took 15.8 s,
and the Pygments lexer took 41 s on 100 KB. Goal: 100 KB of each line
checked by `qvr check` and lexed by Pygments in under 1 s, and the time
growing linearly with the line (the tests count the work: see
`tests/syntax/test_linear_tokenizing.py`).

Prints, per line and size: the check in this process (`qvr_core.check.check`),
`qvr check FILE` as a command (its start included; the start alone on an
empty file is printed first), and the Pygments lexer.

    .venv/bin/python bench/hostile_lines.py [--kb 100 1000] [--no-cli]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from qvr.lexer import QvrLexer
from qvr_core.check import check

QVR = [sys.executable, "-m", "qvr_cli", "check"]

#: Each line is its unit again and again (then a line end).
LINES = {
    "quotes": '"',
    "quote-backslash": '"\\',
    "backslash-quote": '\\"',
    "unterminated string": 'let x = "' + "a b " * 8,
    "hashes": "#",
    "soft keywords": "in ",
    "word then blanks": "x" * 1000 + " " * 1000 + "in ",
    "mixed": '"\\ in # "\\" #[ 1.5e x\t',
}


def line_of(unit: str, kb: int) -> str:
    return unit * (kb * 1000 // len(unit)) + "\n"


def seconds(fn: Callable[..., object], *args: object) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def command(path: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([*QVR, str(path)], capture_output=True, check=False)
    return time.perf_counter() - t0


def lex(text: str) -> None:
    for _ in QvrLexer().get_tokens(text):
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--no-cli", action="store_true", help="skip `qvr check FILE`")
    args = parser.parse_args()
    print(f"Hostile lines ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
    with tempfile.TemporaryDirectory() as folder:
        if not args.no_cli:
            empty = Path(folder) / "empty.qvr"
            empty.write_text("\n")
            print(f"  qvr check of an empty file (the start): {command(empty):6.2f} s")
        for kb in args.kb:
            for name, unit in LINES.items():
                text = line_of(unit, kb)
                path = Path(folder) / "hostile.qvr"
                path.write_text(text, encoding="utf-8")
                checked = seconds(check, text)
                cli = "" if args.no_cli else f"   qvr check {command(path):6.2f} s"
                lexed = seconds(lex, text)
                print(
                    f"  {kb:>5} KB of {name:<20} check {checked:6.2f} s{cli}"
                    f"   Pygments {lexed:6.2f} s"
                )
    print("  goal: 100 KB checked (qvr check) and lexed in under 1 s each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
