"""The editor features and the formatter never import torch (the server must start fast)."""

from __future__ import annotations

import subprocess
import sys

from tests.ide.helpers import ROOT

MODULES = [
    "qvr_core.builtins",
    "qvr_core.ide.builtins_info",
    "qvr_core.ide.rename",
    "qvr_core.ide.inlay",
    "qvr_core.ide.signature",
    "qvr_core.ide.tokens",
    "qvr_core.ide.folding",
    "qvr_core.ide.selection",
    "qvr_core.ide.actions",
    "qvr_core.format.formatter",
    "qvr_core.format.diff",
    "qvr_core.cli.fmt",
]


def test_ide_and_format_modules_do_not_import_torch() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "from qvr_core.format.formatter import format_source\n"
        "format_source(open('examples/encoder_decoder.qvr').read())\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
