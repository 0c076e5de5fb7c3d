"""`qvr export FILE --to stan|numpyro|pymc [--program NAME] [-o OUT]`: another language.

The file is checked first; a file with errors, or a program with a construct the
target cannot express (QVR701, the same located warnings `qvr check --target`
prints), writes nothing and exits 1. Without `-o` the code goes to standard
output, as `make_stancode` prints it; 2 means the file or the output could not
be read or written, or the program to export is not clear.
"""

from __future__ import annotations

import argparse
import os
import sys

from qvr_core.check import check
from qvr_core.cli.report import human
from qvr_core.export import TARGETS, export_program, exportable_programs, target
from qvr_core.host.files import UnreadableFile, command_line_roots, read_text


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("--to", "-t", required=True, choices=sorted(TARGETS), help="the target language")
    p.add_argument("--program", "-p", help="the program to export (default: the file's export)")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of standard output")


def main(args: argparse.Namespace) -> int:
    try:
        text = read_text(args.file, command_line_roots(args.file), universal_newlines=True)
    except UnreadableFile as exc:
        print(f"qvr: cannot read {args.file}: {exc.reason}", file=sys.stderr)
        return 2
    module = check(text)
    if module.errors:
        print(human(args.file, module.lines, tuple(module.errors)), file=sys.stderr)
        print(f"qvr: {args.file} has errors; nothing exported", file=sys.stderr)
        return 1
    choices = exportable_programs(module)
    name = args.program
    if name is None:
        if len(choices) != 1:
            listed = ", ".join(choices) or "none"
            print(
                f"qvr: {args.file} has {len(choices)} programs to export ({listed}); "
                "name one with --program",
                file=sys.stderr,
            )
            return 2
        name = choices[0]
    elif not any(name in table for table in (module.models, module.programs, module.lets)):
        print(f"qvr: {args.file} has no program {name!r}", file=sys.stderr)
        return 2
    chosen = target(args.to)
    out = export_program(module, chosen, name, source=os.path.basename(args.file))
    if out.text is None:
        print(human(args.file, module.lines, out.diagnostics), file=sys.stderr)
        print(f"qvr: {chosen.title} cannot express {name}; nothing written", file=sys.stderr)
        return 1
    if not args.output or args.output == "-":
        sys.stdout.write(out.text)
        return 0
    if os.path.exists(args.output) and os.path.samefile(args.output, args.file):
        print(f"qvr: will not write the export over its source {args.file}", file=sys.stderr)
        return 2
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(out.text)
    except OSError as exc:
        print(f"qvr: cannot write {args.output}: {exc}", file=sys.stderr)
        return 2
    print(f"qvr: wrote {chosen.title} code for {name} to {args.output}", file=sys.stderr)
    return 0
