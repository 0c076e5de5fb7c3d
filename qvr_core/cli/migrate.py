"""`qvr migrate FILE... --to 0.15|current [--check|--diff]`: rewrite files written for an
older quivers in today's syntax (`qvr_core.migrate`), comments and layout kept.

Exit status: 0 when nothing is left to do; 1 with `--check` or `--diff` when a
file would change; 2 when a file cannot be read or written, does not parse, or
changed while it was being migrated (it is then left untouched; the write is
atomic, see `rewrite.write_back`). `-` reads standard input and writes the result to
standard output. An older construct with no known rewrite is named on standard
error and left as written, and so is syntax newer than `--to 0.15` (it is not
rewritten back).
"""

from __future__ import annotations

import argparse
import difflib
import sys

from qvr_core.cli.rewrite import write_back
from qvr_core.host.files import UnreadableFile, command_line_roots, read_text
from qvr_core.migrate import TARGETS, Migration, era_of, migrate_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="files to migrate ('-' for stdin)")
    p.add_argument(
        "--to",
        choices=TARGETS,
        default="current",
        help="the era to write: 0.15 or current (the same syntax today; default current)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 when a file would change"
    )
    mode.add_argument(
        "--diff", action="store_true", help="change nothing; print a unified diff of the changes"
    )


def main(args: argparse.Namespace) -> int:
    status = 0
    for path in args.files:
        status = max(status, _stdin(args) if path == "-" else _file(path, args))
    return status


def _file(path: str, args: argparse.Namespace) -> int:
    try:
        text = read_text(path, command_line_roots(path))
    except UnreadableFile as exc:
        print(f"qvr: cannot read {path}: {exc.reason}", file=sys.stderr)
        return 2
    result = migrate_text(text, args.to)
    if not result.ok:
        print(f"qvr: {path}: {result.refused}", file=sys.stderr)
        return 2
    _report_left(path, result)
    _report_newer(path, result.text, args.to)
    if result.text == text:
        return 0
    if args.check:
        print(f"would migrate {path} (written for {era_of(text).label})")
        return 1
    if args.diff:
        sys.stdout.writelines(_diff(path, text, result.text))
        return 1
    return write_back(
        path, result.text, f"migrated {path} (from {era_of(text).label})", original=text
    )


def _stdin(args: argparse.Namespace) -> int:
    text = sys.stdin.read()
    result = migrate_text(text, args.to)
    if not result.ok:
        print(f"qvr: <stdin>: {result.refused}", file=sys.stderr)
        sys.stdout.write(text)
        return 2
    _report_left("<stdin>", result)
    _report_newer("<stdin>", result.text, args.to)
    changed = result.text != text
    if args.check:
        return 1 if changed else 0
    if args.diff:
        sys.stdout.writelines(_diff("<stdin>", text, result.text))
        return 1 if changed else 0
    sys.stdout.write(result.text)
    return 0


def _report_left(path: str, result: Migration) -> None:
    for d in result.left:
        line = d.span.start_line + 1
        print(
            f"qvr: {path}:{line}: left as written (no rewrite known): {d.message}", file=sys.stderr
        )


def _report_newer(path: str, text: str, target: str) -> None:
    """Say so when the file uses syntax newer than the target (it is not rewritten back)."""
    if target != "0.15":
        return
    found = era_of(text)
    if found.low > (0, 15):
        newer = ", ".join(e.what for e in found.evidence if e.low > (0, 15))
        print(f"qvr: {path}: keeps syntax newer than quivers 0.15 ({newer})", file=sys.stderr)


def _diff(path: str, before: str, after: str) -> list[str]:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    return [line if line.endswith("\n") else line + "\n" for line in lines]
