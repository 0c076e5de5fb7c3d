"""The `qvr` command line: check, diagram, export, run, plot, compare, sensitivity, data, ...

Each subcommand is a module with `add_arguments(parser)` and `main(args)`, named in
`SUBCOMMANDS`. `qvr COMMAND ...` imports that command's module only (a `qvr run`
process, every torchrun rank and every test that starts one skips the other
commands' imports: networkx, the formatter, the exporters, about 0.15 s); the help, an
unknown command and `--version` import them all, so a broken one still fails `qvr
--help` loudly instead of vanishing from it. Each imports only the standard library at
its top and the heavy parts (torch, the server) when it runs, so `qvr check` never
imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Protocol, cast, runtime_checkable

from qvr_core import __version__


@runtime_checkable
class Subcommand(Protocol):
    """What a subcommand module provides (tests/rails/test_cli_entry.py checks each)."""

    def add_arguments(self, p: argparse.ArgumentParser, /) -> None: ...

    def main(self, args: argparse.Namespace, /) -> int: ...


#: name -> (its module, its help), in the order the help lists them.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "check": ("qvr_core.cli.check", "check files and print diagnostics"),
    "diagram": ("qvr_core.cli.diagram", "draw a model as Mermaid, DOT or SVG"),
    "export": ("qvr_core.cli.export", "write a model program in Stan, NumPyro or PyMC"),
    "run": ("qvr_core.cli.run", "fit a program with SVI or NUTS, or sample its prior"),
    "plot": (
        "qvr_core.cli.plot",
        "draw figures of a saved run with ArviZ (trace, pair, ppc, ...)",
    ),
    "compare": (
        "qvr_core.cli.compare",
        "compare saved runs by PSIS-LOO or WAIC (ArviZ), check their fit",
    ),
    "sensitivity": (
        "qvr_core.cli.sensitivity",
        "how much a saved run depends on its priors and likelihood (ArviZ)",
    ),
    "sbc": (
        "qvr_core.cli.sbc",
        "simulation-based calibration: fit simulated data, check the ranks",
    ),
    "data": ("qvr_core.cli.data", "write a data file of the right shapes for a program"),
    "fmt": ("qvr_core.cli.fmt", "format files in the canonical layout"),
    "migrate": ("qvr_core.cli.migrate", "rewrite files in the syntax of a later quivers"),
    "explain": ("qvr_core.cli.explain", "explain a diagnostic code, with an example"),
    "lsp": ("qvr_lsp.cli", "start the language server"),
}


def subcommand(name: str) -> Subcommand:
    """The module of the subcommand `name` (imported on first use)."""
    return cast(Subcommand, importlib.import_module(SUBCOMMANDS[name][0]))


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    # `qvr COMMAND ...`: the first word is the command (the only other words allowed
    # before it are -h and --version), so only its module is needed
    names = [words[0]] if words and words[0] in SUBCOMMANDS else list(SUBCOMMANDS)
    parser = argparse.ArgumentParser(prog="qvr", description="QVR tools")
    parser.add_argument("--version", action="version", version=f"qvr {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in names:
        help_text = SUBCOMMANDS[name][1]
        subcommand(name).add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    module = subcommand(args.command)
    try:
        return module.main(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
