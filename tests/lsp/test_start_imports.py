"""What the server imports to start, and what it leaves for later (`qvr_lsp.analysis.warmup`).

The start is the time to the first diagnostics: the feature modules import
the core's editing modules on first use (their `DEFERRED`), and a thread
imports them soon after the first diagnostics. None of that imports torch
or numpy, and `importlib.metadata` (the version is read from its file) is
not imported at all. Each check runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys

from qvr_core.host.version import installed_version
from qvr_lsp.analysis.warmup import Warmup
from tests.ide.helpers import ROOT

HEAVY = ("torch", "numpy", "importlib.metadata")

START = f"""
import sys
from qvr_lsp.analysis.handlers import deferred_imports
from qvr_lsp.app import HANDLERS, build
from qvr_core.check.incremental import IncrementalChecker

session = build()
IncrementalChecker().check(open("examples/bidirectional_rnn_lm.qvr").read())
deferred = session.warmup.modules
assert deferred and set(deferred) == set(deferred_imports(HANDLERS))
early = [m for m in deferred if m in sys.modules]
assert not early, f"imported at start: {{early}}"
session.warmup.run()
assert session.warmup.done.is_set()
late = [m for m in deferred if m not in sys.modules]
assert not late, f"not imported by the warm-up: {{late}}"
heavy = [m for m in {HEAVY!r} if m in sys.modules]
assert not heavy, f"imported: {{heavy}}"
"""


def test_the_start_defers_the_editing_modules_and_the_warmup_imports_them() -> None:
    subprocess.run([sys.executable, "-c", START], check=True, cwd=ROOT)


def test_a_module_that_fails_to_import_does_not_stop_the_others() -> None:
    warmup = Warmup(["qvr_core.no_such_module", "qvr_core.ide.folding"])
    warmup.run()
    assert warmup.done.is_set() and "qvr_core.ide.folding" in sys.modules


def test_the_version_read_from_the_metadata_file_is_importlib_metadatas() -> None:
    from importlib.metadata import version

    assert installed_version() == version("qvr")


def test_the_version_comes_from_the_first_metadata_on_the_path(tmp_path, monkeypatch) -> None:
    egg = tmp_path / "qvr.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: qvr\nVersion: 9.9.1\n\nVersion: 0\n"
    )
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert installed_version() == "9.9.1"
