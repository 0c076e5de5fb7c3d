"""`qvr-lsp` and `python -m qvr_lsp`: the language server, on stdio or `--tcp HOST:PORT`.

Start it as `qvr-lsp` (the console script: its `sys.path[0]` is its own
folder) or `python -P -m qvr_lsp` (`-P`: the working directory is never on
`sys.path`). Plain `python -m qvr_lsp` started in a folder that holds a
`qvr_lsp/` package runs that package instead of this one, and nothing here
can prevent it (this file is never reached); any other module of the folder
is kept out (see `qvr_lsp/__init__.py`). The VS Code extension starts
`qvr-lsp` or `python -P -m qvr_lsp`; the Neovim setup in the README starts
`qvr-lsp`.
"""

from __future__ import annotations

import argparse
import sys

from qvr_lsp import cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="qvr-lsp", description="The QVR language server")
    cli.add_arguments(parser)
    return cli.main(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
