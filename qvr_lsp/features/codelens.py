"""Code lenses above each program: "Run inference" (exported ones), "Prior predictive"
and "Calibrate" (exported model programs whose priors have draws: none is an improper
`Flat`), "Show diagram", and with the `qvr.export.target`
setting "Export to Stan" (NumPyro, PyMC) above each exportable model program. Which
lens goes where is `qvr_core.ide.lenses`; this turns each into the client's command.

Their commands are client commands, `qvr.client.runInference` and
`qvr.client.showDiagram` with arguments `[uri, program]`: the VS Code
extension registers both (a progress notification and a loss chart; a
diagram webview). Another client maps them onto the server's own commands,
which accept the same `[uri, program]` arguments. "Export to ..." runs the client
command `qvr.client.exportProgram` with `[{"uri", "program", "target"}]`, the
arguments of the server's `qvr.exportProgram` (exports.py): the extension opens
the code it answers beside the source. "Prior predictive" is the run
command with one object, `[{"uri", "program", "method": "prior"}]`: the program's
forward runs, drawn in the run view as a predictive check of the prior. "Calibrate" is
the client command `qvr.client.calibrate` with `[{"uri", "program"}]`: simulation-based
calibration, `qvr sbc` of that program, which the VS Code extension runs in a terminal
(its progress and verdicts are the command's; docs/after_the_fit.md). In Neovim:

    vim.lsp.commands["qvr.client.runInference"] = function(cmd, ctx)
      vim.lsp.buf_request(ctx.bufnr, "workspace/executeCommand",
        { command = "qvr.runInference", arguments = cmd.arguments })
    end
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_never

from lsprotocol import types as lsp

from qvr_core.ide.lenses import LensKind, code_lenses

if TYPE_CHECKING:
    from qvr_core.check.module import CheckedModule
    from qvr_core.export import Target
    from qvr_lsp.analysis.session import Session
    from qvr_lsp.analysis.snapshots import Analysis

RUN_COMMAND = "qvr.client.runInference"
DIAGRAM_COMMAND = "qvr.client.showDiagram"
EXPORT_COMMAND = "qvr.client.exportProgram"
CALIBRATE_COMMAND = "qvr.client.calibrate"
PRIOR_TITLE = "Prior predictive"
CALIBRATE_TITLE = "Calibrate"
OPTIONS = lsp.CodeLensOptions(resolve_provider=False)


async def code_lens(
    session: Session, params: lsp.CodeLensParams, analysis: Analysis
) -> list[lsp.CodeLens]:
    uri = params.text_document.uri
    module = analysis.checked
    target, exportable = _export_target(session, module)
    lenses: list[lsp.CodeLens] = []
    for lens in code_lenses(module, exportable):
        at = analysis.positions.range(lens.header).start  # the lens sits on the header line
        command = _command(lens.kind, uri, lens.program, target)
        lenses.append(lsp.CodeLens(lsp.Range(at, at), command))
        if lens.kind is LensKind.RUN:
            session.prepare_run()  # a worker loaded before the lens is clicked
    return lenses


def _command(kind: LensKind, uri: str, program: str, target: Target | None) -> lsp.Command:
    """The client command of a lens: the server's own arguments for the server command
    it runs in the end (positional `[uri, program]`, or one object)."""
    arguments: list[Any] = [uri, program]
    match kind:
        case LensKind.RUN:
            return lsp.Command("Run inference", RUN_COMMAND, arguments=arguments)
        case LensKind.PRIOR:
            prior = {"uri": uri, "program": program, "method": "prior"}
            return lsp.Command(PRIOR_TITLE, RUN_COMMAND, arguments=[prior])
        case LensKind.CALIBRATE:
            calibrated = {"uri": uri, "program": program}
            return lsp.Command(CALIBRATE_TITLE, CALIBRATE_COMMAND, arguments=[calibrated])
        case LensKind.DIAGRAM:
            return lsp.Command("Show diagram", DIAGRAM_COMMAND, arguments=arguments)
        case LensKind.EXPORT:
            assert target is not None  # export lenses come only with a target
            fields = {"uri": uri, "program": program, "target": target.name}
            return lsp.Command(f"Export to {target.title}", EXPORT_COMMAND, arguments=[fields])
        case _:
            assert_never(kind)


def _export_target(session: Session, module: CheckedModule) -> tuple[Target | None, frozenset[str]]:
    """The target of `qvr.export.target` and the programs it can export; none when the
    setting is off (no lens: they would clutter every program)."""
    name = session.server.settings.export_target
    if not name:
        return None, frozenset()
    from qvr_core.export import TARGETS, exportable_programs

    target = TARGETS.get(name)
    if target is None:
        return None, frozenset()
    return target, frozenset(exportable_programs(module))
