"""`qvr_core.dsl`: load/loads, exports, errors; and torch stays out of the core imports."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from qvr_core.dsl import Program, QvrError, load, loads

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BROKEN = """\
object Token : FinSet 4
morphism f : Token -> Hiden [role=embed]
program p : Token -> Token
    sample h <- f
    return h
export p
"""


def test_load_compiles_the_default_export_once() -> None:
    prog = load(EXAMPLES / "vanilla_rnn_lm.qvr")
    assert isinstance(prog, Program)
    assert prog.exports == ("vanilla_rnn_lm",)
    assert prog.morphism is prog.morphism is prog["vanilla_rnn_lm"]
    assert prog.module.ok and "vanilla_rnn_lm" in prog


def test_a_source_with_errors_raises_qvr_error_listing_them() -> None:
    with pytest.raises(QvrError) as err:
        loads(BROKEN)
    message = str(err.value)
    assert "<source>:2:23: QVR101 undefined" in message and "Hiden" in message
    assert err.value.diagnostics and all(d.is_error for d in err.value.diagnostics)
    assert isinstance(err.value, ValueError)


def test_load_names_the_file_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.qvr"
    path.write_text(BROKEN)
    with pytest.raises(QvrError, match=r"broken\.qvr:2:23: QVR101"):
        load(path)


def test_other_exports_by_name() -> None:
    source = textwrap.dedent(
        """
        object X : Real 2
        morphism f : X -> X [role=kernel, scale=0.1] ~ Normal
        let twice = f >> f
        program p : X -> X
            sample y <- twice
            return y
        export p
        export twice
        """
    )
    prog = loads(source)
    assert prog.exports == ("p", "twice")
    assert prog.get("twice") is prog["twice"]
    assert prog.get("f") is None
    with pytest.raises(KeyError, match="not exported"):
        prog["f"]


def test_no_export_is_a_clear_error() -> None:
    source = "object X : Real 2\nlet i = identity(X)\n"
    prog = loads(source)
    with pytest.raises(QvrError, match="exports nothing"):
        _ = prog.morphism


@pytest.mark.parametrize(
    "modules",
    [
        "qvr_core",
        "qvr_core.check",
        "qvr_core.syntax",
        "qvr_core.dsl",
        "qvr_core.runtime",
        "qvr_core.runtime.errors",
    ],
)
def test_core_imports_do_not_import_torch(modules: str) -> None:
    code = (
        f"import sys, {modules}\n"
        "from qvr_core.check import check\n"
        "check(open(sys.argv[1]).read())\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    path = str(EXAMPLES / "vanilla_rnn_lm.qvr")
    done = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
