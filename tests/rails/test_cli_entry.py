"""The `qvr` entry point imports every subcommand by name, and none of them loads torch or pygls."""

from __future__ import annotations

import re
import subprocess
import sys

from qvr_cli.main import SUBCOMMANDS, Subcommand, main, subcommand
from tests.conftest import ROOT


def test_help_lists_every_subcommand(capsys) -> None:
    try:
        main(["--help"])
    except SystemExit as stop:
        assert stop.code == 0
    out = capsys.readouterr().out
    for name in SUBCOMMANDS:  # its help beside it, or under it for a long name
        assert re.search(rf"^    {name}(\s|$)", out, re.M), name


def test_the_entry_point_imports_neither_torch_nor_the_server() -> None:
    code = (
        "import sys\n"
        "import qvr_cli.main\n"
        "loaded = {'torch', 'pygls', 'qvr_lsp.protocol.server'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_every_subcommand_module_is_a_subcommand() -> None:
    for name in SUBCOMMANDS:
        assert isinstance(subcommand(name), Subcommand), name
