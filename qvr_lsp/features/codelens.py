"""Code lenses above each program: "Run inference" (exported ones), "Prior predictive"
and "Calibrate" (exported model programs whose priors have draws: none is an improper
`Flat`), "Show diagram", and with the `qvr.export.target`
setting "Export to Stan" (NumPyro, PyMC) above each exportable model program.

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

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.plan.runnable import improper_prior, runnable_programs
from qvr_lsp.features.commands import inference_runs
from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_core.check.module import CheckedModule
    from qvr_core.export import Target
    from qvr_lsp.server import QvrLanguageServer

RUN_COMMAND = "qvr.client.runInference"
DIAGRAM_COMMAND = "qvr.client.showDiagram"
EXPORT_COMMAND = "qvr.client.exportProgram"
CALIBRATE_COMMAND = "qvr.client.calibrate"
PRIOR_TITLE = "Prior predictive"
CALIBRATE_TITLE = "Calibrate"


def register(server: QvrLanguageServer) -> None:
    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))
    @guarded(list)
    async def code_lens(params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        snap = await server.settled(uri)
        analysis = snap.structural() if snap is not None else None
        if analysis is None or analysis.module is None:
            return []
        lenses: list[lsp.CodeLens] = []
        module = analysis.module
        runnable = runnable_programs(module)
        decls = {p.name: p.decl for p in module.programs.values()}
        decls |= {m.name: m.decl for m in module.models.values()} | runnable
        export = _export_lens(server, module)
        for name, decl in sorted(decls.items(), key=lambda item: item[1].span.start):
            rng = analysis.positions.range(decl.header_span)
            rng = lsp.Range(rng.start, rng.start)  # the lens sits on the header line
            arguments = [uri, name]
            if name in module.exports and name in runnable:  # what a run can load
                run = lsp.Command("Run inference", RUN_COMMAND, arguments=arguments)
                lenses.append(lsp.CodeLens(rng, run))
                _prepare_worker(server)
                # its priors are the user's own: worth a look, where they have draws
                if name in module.models and improper_prior(module, name) is None:
                    prior = {"uri": uri, "program": name, "method": "prior"}
                    check = lsp.Command(PRIOR_TITLE, RUN_COMMAND, arguments=[prior])
                    lenses.append(lsp.CodeLens(rng, check))
                    # simulation-based calibration draws from the priors as well
                    calibrated = {"uri": uri, "program": name}
                    sbc = lsp.Command(CALIBRATE_TITLE, CALIBRATE_COMMAND, arguments=[calibrated])
                    lenses.append(lsp.CodeLens(rng, sbc))
            if name in module.programs or name in module.models:  # what the diagram draws
                draw = lsp.Command("Show diagram", DIAGRAM_COMMAND, arguments=arguments)
                lenses.append(lsp.CodeLens(rng, draw))
            if export is not None and name in export[1]:
                target = export[0]
                fields = {"uri": uri, "program": name, "target": target.name}
                write = lsp.Command(f"Export to {target.title}", EXPORT_COMMAND, arguments=[fields])
                lenses.append(lsp.CodeLens(rng, write))
        return lenses


def _export_lens(
    server: QvrLanguageServer, module: CheckedModule
) -> tuple[Target, frozenset[str]] | None:
    """The target of `qvr.export.target` and the model programs its lens goes above;
    None when the setting is off (no lens: they would clutter every program)."""
    name = server.settings.export_target
    if not name:
        return None
    from qvr_core.export import TARGETS, exportable_programs

    target = TARGETS.get(name)
    if target is None:
        return None
    return target, frozenset(p for p in exportable_programs(module) if p in module.models)


def _prepare_worker(server: QvrLanguageServer) -> None:
    """A Run lens is shown: have a worker loaded before it is clicked (`spare_worker`)."""
    inference_runs(server).prepare_spare()
