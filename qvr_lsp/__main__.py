"""`qvr-lsp` and `python -m qvr_lsp`: the language server, on stdio or `--tcp HOST:PORT`."""

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
