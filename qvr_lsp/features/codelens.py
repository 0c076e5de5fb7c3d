"""Code lenses above each program: "Run inference" (exported ones) and "Show diagram".

Their commands are client commands, `qvr.client.runInference` and
`qvr.client.showDiagram` with arguments `[uri, program]`: the VS Code
extension registers both (a progress notification and a loss chart; a
diagram webview). Another client maps them onto the server's own commands,
which accept the same `[uri, program]` arguments; in Neovim:

    vim.lsp.commands["qvr.client.runInference"] = function(cmd, ctx)
      vim.lsp.buf_request(ctx.bufnr, "workspace/executeCommand",
        { command = "qvr.runInference", arguments = cmd.arguments })
    end
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_lsp.guard import guarded

if TYPE_CHECKING:
    from qvr_lsp.server import QvrLanguageServer

RUN_COMMAND = "qvr.client.runInference"
DIAGRAM_COMMAND = "qvr.client.showDiagram"


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
        programs = sorted(analysis.module.programs.values(), key=lambda p: p.decl.span.start)
        for program in programs:
            header = program.decl.header_span
            rng = analysis.positions.range(header)
            rng = lsp.Range(rng.start, rng.start)  # the lens sits on the header line
            arguments = [uri, program.name]
            if program.name in analysis.module.exports:  # what a run can load
                run = lsp.Command("Run inference", RUN_COMMAND, arguments=arguments)
                lenses.append(lsp.CodeLens(rng, run))
            draw = lsp.Command("Show diagram", DIAGRAM_COMMAND, arguments=arguments)
            lenses.append(lsp.CodeLens(rng, draw))
        for model in analysis.module.models.values():  # Bayesian models: their plate diagram
            rng = analysis.positions.range(model.decl.header_span)
            rng = lsp.Range(rng.start, rng.start)
            draw = lsp.Command("Show diagram", DIAGRAM_COMMAND, arguments=[uri, model.name])
            lenses.append(lsp.CodeLens(rng, draw))
        return sorted(lenses, key=lambda lens: (lens.range.start.line, lens.range.start.character))
