"""`qvr diagram FILE [--name N] [--format mermaid|dot|svg] [-o OUT]`: draw a model.

A file with errors is still drawn (what the checker could type), its errors
go to stderr and the exit status is 1; 2 means nothing could be drawn.
"""

from __future__ import annotations

import argparse
import sys

from qvr_core.check import check
from qvr_core.cli.report import human
from qvr_core.graph import FORMATS, SvgRenderError, UnknownDiagramName, draw
from qvr_core.host.files import UnreadableFile, command_line_roots, read_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("--name", "-n", help="draw only this program or let (default: the whole file)")
    p.add_argument("--format", "-f", choices=FORMATS, default="mermaid", help="default: mermaid")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of standard output")
    p.add_argument("--strict", action="store_true", help="matching by dimension is an error")


def main(args: argparse.Namespace) -> int:
    try:
        text = read_text(args.file, command_line_roots(args.file), universal_newlines=True)
    except UnreadableFile as exc:
        print(f"qvr: cannot read {args.file}: {exc.reason}", file=sys.stderr)
        return 2
    module = check(text, strict=args.strict)
    try:
        diagram = draw(module, name=args.name, format=args.format)
    except (UnknownDiagramName, SvgRenderError) as exc:
        print(f"qvr: {exc}", file=sys.stderr)
        return 2
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(diagram.text)
        except OSError as exc:
            print(f"qvr: cannot write {args.output}: {exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(diagram.text)
    if module.errors:
        print(human(args.file, module.lines, tuple(module.errors)), file=sys.stderr)
        print(
            f"qvr: {args.file} has errors; the diagram shows what could be checked",
            file=sys.stderr,
        )
        return 1
    return 0
