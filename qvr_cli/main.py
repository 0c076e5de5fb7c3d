"""The `qvr` command line: check, diagram, export, run, plot, compare, data, fmt, migrate, ...

Each subcommand is a module with `add_arguments(parser)` and `main(args)`.
They are imported here by name, so a broken one fails `qvr` loudly instead
of vanishing from the help. Each imports only the standard library at its
top and the heavy parts (torch, the server) when it runs, so `qvr check`
never imports torch.
"""

from __future__ import annotations

import argparse
import sys
from typing import Protocol

from qvr_core import __version__
from qvr_core.cli import check, compare, data, diagram, explain, export, fmt, migrate, plot, run
from qvr_lsp import cli as lsp


class Subcommand(Protocol):
    """What a subcommand module provides (modules are checked against it by mypy)."""

    def add_arguments(self, p: argparse.ArgumentParser, /) -> None: ...

    def main(self, args: argparse.Namespace, /) -> int: ...


SUBCOMMANDS: dict[str, tuple[Subcommand, str]] = {
    "check": (check, "check files and print diagnostics"),
    "diagram": (diagram, "draw a model as Mermaid, DOT or SVG"),
    "export": (export, "write a model program in Stan, NumPyro or PyMC"),
    "run": (run, "fit a program with SVI or NUTS, or sample its prior"),
    "plot": (plot, "draw figures of a saved run with ArviZ (trace, pair, ppc, ...)"),
    "compare": (compare, "compare saved runs by PSIS-LOO or WAIC (ArviZ), check their fit"),
    "data": (data, "write a data file of the right shapes for a program"),
    "fmt": (fmt, "format files in the canonical layout"),
    "migrate": (migrate, "rewrite files in the syntax of a later quivers"),
    "explain": (explain, "explain a diagnostic code, with an example"),
    "lsp": (lsp, "start the language server"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qvr", description="QVR tools")
    parser.add_argument("--version", action="version", version=f"qvr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in SUBCOMMANDS.items():
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    module, _ = SUBCOMMANDS[args.command]
    try:
        return module.main(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
