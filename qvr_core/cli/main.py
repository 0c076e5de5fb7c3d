"""The `qvr` command line: check, diagram, run, fmt, migrate, explain, lsp.

Each subcommand lives in its own module and is imported only when used, so
`qvr check` never imports torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS = {
    "check": ("qvr_core.cli.check", "check files and print diagnostics"),
    "diagram": ("qvr_core.cli.diagram", "draw a model as Mermaid, DOT or SVG"),
    "run": ("qvr_core.cli.run", "fit a program with SVI or NUTS, or sample its prior"),
    "fmt": ("qvr_core.cli.fmt", "format files in the canonical layout"),
    "migrate": ("qvr_core.cli.migrate", "rewrite files in the syntax of a later quivers"),
    "explain": ("qvr_core.cli.explain", "explain a diagnostic code, with an example"),
    "lsp": ("qvr_lsp.cli", "start the language server"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qvr", description="QVR tools")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    modules = {}
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        modules[name] = module
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    try:
        return int(modules[args.command].main(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
