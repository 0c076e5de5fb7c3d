"""`qvr check FILE... [--json] [--strict] [--target T]`: the checker as a compiler would report it.

`--target stan|numpyro|pymc` adds what that export target cannot express (QVR701,
located at the construct) for a file without errors, and such a file then exits 1:
the question asked was whether `qvr export --to T` would write it."""

from __future__ import annotations

import argparse
import json
import sys

from qvr_core.check import check
from qvr_core.cli.report import as_json, human
from qvr_core.export import TARGETS, target, target_diagnostics
from qvr_core.host.files import UnreadableFile, command_line_roots, read_text
from qvr_core.text.diagnostics import Severity


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print one JSON array of diagnostics")
    p.add_argument("--strict", action="store_true", help="matching by dimension is an error")
    p.add_argument(
        "--target",
        choices=sorted(TARGETS),
        help="also report what `qvr export --to TARGET` cannot express",
    )


def main(args: argparse.Namespace) -> int:
    """Exit 0 when clean, 1 when any file has errors, 2 when a file cannot be read."""
    records: list[dict[str, object]] = []
    status = 0
    for path in args.files:
        try:
            text = read_text(path, command_line_roots(path), universal_newlines=True)
        except UnreadableFile as exc:
            print(f"qvr: cannot read {path}: {exc.reason}", file=sys.stderr)
            status = 2
            continue
        module = check(text, strict=args.strict)
        diagnostics = tuple(module.diagnostics)
        failed = any(d.severity is Severity.ERROR for d in diagnostics)
        if args.target and not failed:
            unexpressed = target_diagnostics(module, target(args.target))
            diagnostics += unexpressed
            failed = bool(unexpressed)
        if args.json:
            records.extend(as_json(path, diagnostics))
        elif diagnostics:
            print(human(path, module.lines, diagnostics))
        if failed and status == 0:
            status = 1
    if args.json:
        print(json.dumps(records, indent=2))
    return status
