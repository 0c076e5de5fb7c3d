"""A bad option is one line on stderr and exit status 2, for every subcommand alike."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from qvr_core.host.extras import missing

#: The exit status of a command line that cannot be run as given.
EXIT_USAGE = 2


def one_line_errors(parser: argparse.ArgumentParser, command: str) -> None:
    """Make `parser` report a bad option as `qvr COMMAND: error: ...` (no usage block)."""

    def error(message: str) -> NoReturn:
        print(
            f"qvr {command}: error: {message} (qvr {command} --help lists the options)",
            file=sys.stderr,
        )
        sys.exit(EXIT_USAGE)

    parser.error = error  # type: ignore[method-assign]  # argparse's hook for its errors


def missing_extra(command: str, modules: tuple[str, ...], extra: str) -> int | None:
    """EXIT_USAGE after one line naming the extra to install when any of `modules` is not
    importable (`qvr_core.host.extras`), else None: said before the command starts its work."""
    absent = missing(modules)
    if not absent:
        return None
    print(
        f"qvr {command}: needs {' and '.join(absent)}, not installed here: "
        f"pip install 'qvr[{extra}]'",
        file=sys.stderr,
    )
    return EXIT_USAGE


def memory_size(text: str) -> int:
    """`--memory-budget SIZE` as bytes (`512MB`, `8GB`, a number of MiB), as `qvr run`
    reads it; argparse's error, one line, otherwise."""
    from qvr_core.sizing.resources import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def read_budget_argument(p: argparse.ArgumentParser, what: str = "a run whose arrays need") -> None:
    """`--memory-budget` of a command that reads saved runs (`qvr compare`, `plot`,
    `sensitivity`): a run sized from its headers over it is refused unread."""
    p.add_argument(
        "--memory-budget",
        type=memory_size,
        metavar="SIZE",
        help=f"refuse {what} more to read (e.g. 4GB; default: half the available memory)",
    )
