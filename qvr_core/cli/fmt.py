"""`qvr fmt FILE... [--check]`: the canonical layout, the same formatter as the editor's.

Exit status: 0 when nothing is left to do; 1 with `--check` when a file
would change; 2 when a file cannot be read or written, does not parse, or
changed while it was being formatted (it is then left untouched; the write is
atomic, see `rewrite.write_back`). `-` reads standard input and writes the result to
standard output, for editors that pipe a buffer through a formatter.
"""

from __future__ import annotations

import argparse
import sys

from qvr_core.cli.rewrite import write_back
from qvr_core.format.formatter import format_text
from qvr_core.host.files import UnreadableFile, command_line_roots, read_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="files to format ('-' for stdin)")
    p.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 when a file is not in the canonical layout",
    )


def main(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        status = max(status, _stdin(args.check) if path == "-" else _file(path, args.check))
    return status


def _file(path: str, check_only: bool) -> int:
    try:
        text = read_text(path, command_line_roots(path))
    except UnreadableFile as exc:
        print(f"qvr: cannot read {path}: {exc.reason}", file=sys.stderr)
        return 2
    result = format_text(text)
    if not result.ok:
        print(f"qvr: {path}: {result.refused}", file=sys.stderr)
        return 2
    if result.text == text:
        return 0
    if check_only:
        print(f"would reformat {path}")
        return 1
    return write_back(path, result.text, f"reformatted {path}", original=text)


def _stdin(check_only: bool) -> int:
    text = sys.stdin.read()
    result = format_text(text)
    if not result.ok:
        print(f"qvr: <stdin>: {result.refused}", file=sys.stderr)
        sys.stdout.write(text)
        return 2
    if check_only:
        return 0 if result.text == text else 1
    sys.stdout.write(result.text)
    return 0
