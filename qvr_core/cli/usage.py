"""A bad option is one line on stderr and exit status 2, for every subcommand alike."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

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
