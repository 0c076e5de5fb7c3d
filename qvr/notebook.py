"""The `%%qvr` cell magic: check a cell of QVR, draw its model and, with `--run`, fit it.

A notebook is where a model is tried out, so the cell answers as `qvr check`,
`qvr diagram` and `qvr run` would, through the same core functions, but as rich
output: diagnostics with their source line and caret (HTML and plain text), the
diagram as SVG (Mermaid text where Graphviz is missing), and the fit's ArviZ
InferenceData as the cell's value. A cell with errors is neither drawn nor run.
Bad options are IPython's one-line `UsageError`, never a traceback.

    %%qvr --run --method nuts --steps 200 --data eight_schools.json --name idata
"""

from __future__ import annotations

import argparse
import html
import shlex
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display as _display

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.cli.report import human
from qvr_core.graph import SvgRenderError, draw
from qvr_core.host.extras import ARVIZ_MODULES, RUN_MODULES, missing
from qvr_core.plan.run_arguments import (
    FIELDS,
    RunArgumentError,
    RunArguments,
    validate_run_arguments,
)
from qvr_core.text.cells import MAGIC, qvr_text
from qvr_core.text.diagnostics import Severity

#: IPython's `display`, which it leaves unannotated.
display: Callable[..., object] = _display
#: How a cell is named in diagnostics (`cell:3:5: error[QVR101]: ...`).
CELL = "cell"
_COLOURS = {
    Severity.ERROR: "#c62828",
    Severity.WARNING: "#b26a00",
    Severity.INFORMATION: "#1565c0",
    Severity.HINT: "#1565c0",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"%%qvr: {message} (%%qvr? lists the options)")


def _parser() -> _Parser:
    p = _Parser(prog="%%qvr", add_help=False)
    p.add_argument("--run", action="store_true", help="fit the model after checking it")
    p.add_argument("--name", help="also store the InferenceData in this variable")
    p.add_argument("--strict", action="store_true", help="matching by dimension is an error")
    p.add_argument("--predictive", action="store_true", help="draw the observed sites again")
    for key in FIELDS:  # every `qvr run` argument, checked by validate_run_arguments
        flag = "--" + key.replace("_", "-")
        p.add_argument(flag, dest=key, metavar=key.upper(), help=f"as `qvr run {flag}`")
    return p


def parse_options(line: str) -> tuple[argparse.Namespace, RunArguments]:
    """The magic's options and the run's validated arguments; UsageError when either is bad."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"%%qvr: {e}") from None
    options = _parser().parse_args(words)
    given = {key: getattr(options, key) for key in FIELDS if getattr(options, key) is not None}
    if given and not options.run:
        raise UsageError(f"%%qvr: --{next(iter(given)).replace('_', '-')} needs --run")
    if options.name is not None and not options.name.isidentifier():
        raise UsageError(f"%%qvr: --name {options.name!r} is not a Python name")
    try:
        return options, validate_run_arguments(given, text=True)
    except RunArgumentError as e:
        raise UsageError(f"%%qvr: {e}") from None


def diagnostics_bundle(module: CheckedModule) -> dict[str, str]:
    """The module's diagnostics as `qvr check` prints them, in plain text and in HTML."""
    ds = module.diagnostics
    blocks = [
        f'<pre style="color:{_COLOURS[d.severity]};margin:0 0 0.5em 0">'
        f"{html.escape(human(CELL, module.lines, (d,)))}</pre>"
        for d in ds
    ]
    return {"text/plain": human(CELL, module.lines, ds), "text/html": "".join(blocks)}


def diagram_bundle(module: CheckedModule) -> dict[str, str] | None:
    """The model's diagram as SVG, or its Mermaid text with a note when Graphviz cannot
    draw it; None when there is nothing to draw."""
    try:
        diagram = draw(module, format="svg")
    except SvgRenderError as e:
        mermaid = draw(module, format="mermaid")
        if not mermaid.nodes:
            return None
        note = f"No SVG ({e}); the diagram in Mermaid:"
        return {
            "text/plain": f"{note}\n{mermaid.text}",
            "text/markdown": f"{note}\n\n```mermaid\n{mermaid.text}\n```\n",
        }
    if not diagram.nodes:
        return None
    return {
        "image/svg+xml": diagram.text,
        "text/plain": f"<QVR diagram: {len(diagram.nodes)} nodes>",
    }


def cell_source(line: str, cell: str) -> str:
    """The QVR text of a cell, by the rule every reader of `%%qvr` cells uses
    (`qvr_core.text.cells`): IPython hands the magic its line and body apart; whole again,
    `cell:18` is the 18th line the notebook shows, as in the language server's squiggles
    and hovers of the same cell (VS Code, JupyterLab)."""
    text = qvr_text(f"{MAGIC} {line}".rstrip() + "\n" + cell)
    assert text is not None  # a magic line, by construction
    return text


def qvr_cell(line: str, cell: str, shell: InteractiveShell | None = None) -> Any:
    """The `%%qvr` magic: diagnostics, then the diagram; with `--run`, the fit's
    InferenceData (also stored as `--name` in the user's namespace)."""
    options, run_args = parse_options(line)
    source = cell_source(line, cell)
    module = check(source, strict=options.strict)
    if module.diagnostics:
        display(diagnostics_bundle(module), raw=True)
    if not module.ok:
        return None
    picture = diagram_bundle(module)
    if picture is not None:
        display(picture, raw=True)
    if not options.run:
        return None
    idata = _fit(source, run_args, options.predictive)
    if idata is not None and options.name and shell is not None:
        shell.user_ns[options.name] = idata
    return idata


def _fit(source: str, run_args: RunArguments, predictive: bool) -> Any:
    """Run as `qvr run --output run.nc` does and give its InferenceData; a failed run is
    one line on stderr and None."""
    absent = missing((*RUN_MODULES, *ARVIZ_MODULES))
    if absent:
        raise UsageError(f"%%qvr --run needs {' and '.join(absent)}: pip install 'qvr[run,arviz]'")
    from qvr_core.cli.run import ProgressLine, format_summary, unexpected
    from qvr_core.inference.errors import InferenceError
    from qvr_core.runs import fit

    progress = ProgressLine(run_args.method, sys.stderr)
    try:
        result = fit(
            source,
            path=CELL,
            data=run_args.data,
            predictive=predictive,
            on_progress=progress,
            on_update=progress.update,
            **run_args.job_arguments(),
        )
    except InferenceError as e:  # NonFiniteLossError too: the user's model or data
        print(f"qvr: error: {e}", file=sys.stderr)
        return None
    except Exception as e:  # qvr's own bug: still one line, as `qvr run` says it
        print(f"qvr: {unexpected(e)}", file=sys.stderr)
        return None
    finally:
        progress.finish()
    print(format_summary(result.run, run_args.steps))
    return result.inference_data()


def register(shell: InteractiveShell) -> None:
    """Register `%%qvr` on `shell` (what `%load_ext qvr` does)."""

    def magic(line: str, cell: str) -> Any:
        return qvr_cell(line, cell, shell)

    magic.__doc__ = (qvr_cell.__doc__ or "") + "\n\n" + _parser().format_help()
    shell.magics_manager.register_function(magic, magic_kind="cell", magic_name="qvr")
