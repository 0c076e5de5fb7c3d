"""`qvr data FILE [--program P] -o OUT.npz`: a data file of the right shapes for a program.

    qvr data model.qvr -o data.npz
    qvr run model.qvr --data data.npz --method prior

A program that reads data names (`sigma`, `county`, `x`) cannot run without a
data file; this writes one (`qvr_core.runs.synthesise`): every data name and
observed site at the shape, dtype and support the checker gives it, drawn
under `--seed`, so a model can be tried before its data exists. It prints one
line per key and the `qvr run` command that reads the file. Exit status 1
when the program cannot run (its one-line reason), 2 for a bad argument, an
unreadable source or an output that cannot be written.

torch is imported only when the command runs, so `qvr --help` stays fast.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable

from qvr_core.cli.usage import EXIT_USAGE, missing_extra, one_line_errors
from qvr_core.host.extras import RUN_MODULES
from qvr_core.host.files import UnreadableFile, command_line_roots, read_text
from qvr_core.plan.run_arguments import RunArgumentError, validate_run_arguments

#: The formats written (kept in step with `qvr_core.runs.synthesise.SUFFIXES`, which
#: imports torch: this module must not).
SUFFIXES = (".npz", ".json")
MAX_ROWS = 1_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the `qvr data` options on `parser`."""
    one_line_errors(parser, "data")
    parser.add_argument("file", metavar="FILE", help="the .qvr source file")
    parser.add_argument("--program", help="the exported program (default: the first)")
    parser.add_argument(
        "-o", "--output", required=True, metavar="OUT", help="the file to write: .npz or .json"
    )
    parser.add_argument("--seed", type=_checked("seed"), default=0, help="0 to 2**63-1")
    parser.add_argument(
        "--rows",
        type=_rows,
        default=None,
        help="values of a data name no plate sizes (default 20)",
    )
    parser.add_argument(
        "--batch", type=_checked("batch"), default=16, help="a seed program's batch"
    )
    parser.add_argument(
        "--seq-len", type=_checked("seq_len"), default=8, help="a seed program's sequence length"
    )


def _checked(key: str) -> Callable[[str], int]:
    """An argparse type that converts one value as `qvr run` does."""

    def convert(text: str) -> int:
        try:
            return int(getattr(validate_run_arguments({key: text}, text=True), key))
        except RunArgumentError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = key
    return convert


def _rows(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rows must be a whole number, not {text!r}") from None
    if not 1 <= n <= MAX_ROWS:
        raise argparse.ArgumentTypeError(f"rows must be 1 to {MAX_ROWS:,}, not {n}")
    return n


def main(args: argparse.Namespace) -> int:
    """Write the data file; print what it holds. Returns the exit status."""
    missing = missing_extra("data", RUN_MODULES, "run")
    if missing is not None:
        return missing
    output = str(args.output)
    if not output.lower().endswith(SUFFIXES):
        print(
            f"qvr data: error: --output {output}: write a {' or '.join(SUFFIXES)} file",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        source = read_text(args.file, command_line_roots(args.file), universal_newlines=True)
    except UnreadableFile as e:
        print(f"qvr data: cannot read {args.file}: {e.reason}", file=sys.stderr)
        return EXIT_USAGE

    from qvr_core.inference.errors import InferenceError
    from qvr_core.runs.prepare import checked_program
    from qvr_core.runs.synthesise import DEFAULT_ROWS, synthesise, write_data

    try:
        checked, name = checked_program(source, args.file, args.program)
        data = synthesise(
            checked,
            name,
            seed=args.seed,
            rows=args.rows or DEFAULT_ROWS,
            batch=args.batch,
            seq_len=args.seq_len,
        )
    except InferenceError as e:
        print(f"qvr data: error: {e}", file=sys.stderr)
        return 1
    try:
        written = write_data(data, output)
    except (OSError, InferenceError) as e:
        print(f"qvr data: cannot write {output}: {e}", file=sys.stderr)
        return EXIT_USAGE
    for column in data.columns:
        print(f"  {column.describe()}")
    program = f" --program {shlex.quote(name)}" if args.program else ""
    command = f"qvr run {shlex.quote(args.file)}{program} --data {shlex.quote(str(written))}"
    print(f"wrote {written} for program {name}; try it: {command} --method prior")
    return 0
