"""`%load_ext qvr` and `%%qvr`: a real notebook run by nbclient, and the pieces it shows."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.error import UsageError
from nbclient import NotebookClient

from qvr.notebook import cell_source, diagnostics_bundle, diagram_bundle, parse_options
from qvr_core.check import check
from qvr_core.text.cells import qvr_text

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples" / "models" / "linear_regression.qvr"
DATA = ROOT / "examples" / "models" / "linear_regression.json"
BROKEN = "object Token : FinSet 256\nmorphism f : Token Token\n"


def test_importing_qvr_imports_neither_ipython_nor_pygments_nor_torch() -> None:
    code = (
        "import qvr, sys; print([m for m in ('IPython', 'pygments', 'torch') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--bogus", "unrecognized arguments: --bogus"),
        ("--steps 10", "--steps needs --run"),
        ("--run --method magic", "method must be one of svi, nuts, prior"),
        ("--run --steps 0", "steps must be a whole number"),
        ("--run --name 2x", "--name '2x' is not a Python name"),
        ("--run --data 'open", "No closing quotation"),
    ],
)
def test_bad_options_are_one_usage_error(line: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_options(line)


def test_options_are_validated_as_qvr_run_validates_them() -> None:
    options, run = parse_options("--run --method nuts --steps 50 --chains 2 --seed 7 --name fit")
    assert options.run and options.name == "fit"
    assert (run.method, run.steps, run.chains, run.seed) == ("nuts", 50, 2, 7)


def test_a_cell_is_checked_with_its_magic_line_so_lines_are_the_notebooks() -> None:
    assert cell_source("", BROKEN) == "# qvr\n" + BROKEN
    body = "object X : Real 1\n"
    assert cell_source("--run --seed 1", body) == "# qvr --run --seed 1\n" + body
    # the server's reading of the same cell has the same lines
    server = qvr_text("%%qvr --run\n" + BROKEN)
    assert server is not None
    assert cell_source("--run", BROKEN).splitlines() == server.splitlines()
    (error,) = check(cell_source("", BROKEN)).diagnostics
    assert error.span.start_line == 2  # 0-based: the cell's third line, as the notebook shows it


def test_diagnostics_show_the_line_and_a_caret_in_text_and_html() -> None:
    bundle = diagnostics_bundle(check(BROKEN))
    text = bundle["text/plain"]
    assert "cell:2:20: error[QVR001]" in text
    assert "    2 | morphism f : Token Token\n      |                    ^^^^^" in text
    assert "error[QVR001]" in bundle["text/html"] and "^^^^^" in bundle["text/html"]
    assert "&#x27;" in bundle["text/html"]  # escaped, not raw HTML


def test_the_diagram_is_svg_and_mermaid_text_where_graphviz_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = check(MODEL.read_text(encoding="utf-8"))
    svg = diagram_bundle(module)
    assert svg is not None and "<svg" in svg["image/svg+xml"]
    monkeypatch.setenv("PATH", "")
    mermaid = diagram_bundle(module)
    assert mermaid is not None and "image/svg+xml" not in mermaid
    assert (
        "Graphviz" in mermaid["text/plain"] and "```mermaid\nflowchart" in mermaid["text/markdown"]
    )


def _kernel(folder: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A kernelspec running this interpreter, so the kernel imports this checkout's qvr."""
    spec = folder / "kernels" / "qvr-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "qvr test", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(folder))
    return "qvr-test"


def _outputs(cell: Any, kind: str) -> list[Any]:
    return [o for o in cell.outputs if kind in o.get("data", {})]


@pytest.mark.slow
def test_a_notebook_checks_draws_and_fits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = MODEL.read_text(encoding="utf-8")
    run = f"--run --method nuts --steps 30 --chains 1 --seed 1 --data {shlex.quote(str(DATA))}"
    cells = [
        "%load_ext qvr",
        "%%qvr\n" + BROKEN,
        "%%qvr --bogus\n" + source,
        "%%qvr\n" + source,
        f"%%qvr {run} --name idata\n" + source,
        "import arviz\n"
        "assert isinstance(idata, arviz.InferenceData)\n"
        "print(sorted(idata.groups()))",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.cells[2].metadata["tags"] = ["raises-exception"]
    client = NotebookClient(
        nb, kernel_name=_kernel(tmp_path, monkeypatch), timeout=120, resources={}
    )
    client.execute(cwd=str(tmp_path))
    _, broken, bogus, model, fitted, checked = nb.cells

    (diagnostic,) = _outputs(broken, "text/html")
    # the cell's third line, counting `%%qvr` as the notebook and the language server do
    assert "cell:3:20: error[QVR001]" in diagnostic.data["text/plain"]
    assert "^^^^^" in diagnostic.data["text/plain"]
    assert "image/svg+xml" not in json.dumps(broken.outputs)  # a broken model is not drawn

    shown = json.dumps(bogus.outputs)
    assert "UsageError" in shown and "unrecognized arguments: --bogus" in shown
    assert "Traceback" not in shown

    (picture,) = _outputs(model, "image/svg+xml")
    assert "<svg" in picture.data["image/svg+xml"]

    assert _outputs(fitted, "image/svg+xml")
    (result,) = [o for o in fitted.outputs if o.output_type == "execute_result"]
    assert "posterior" in result.data["text/plain"]
    printed = "".join(o.get("text", "") for o in fitted.outputs if o.output_type == "stream")
    assert "linear_regression: nuts" in printed and "r_hat max" in printed
    assert "'posterior'" in "".join(o.get("text", "") for o in checked.outputs)
