"""The composition root: the server's handler table, and the server built from it.

`qvr_lsp` is three rooms and the features: `protocol/` (the connection, documents,
settings: it knows no analysis), `analysis/` (the analyses of the open documents, the
snapshot kinds, the dispatch), `runs/` (inference in worker processes) and
`features/` (one module per editor feature). Features and runs sit side by side and
never import each other; only this module imports them both and wires them to the
rooms below (docs/architecture.md, *The language server*).

`HANDLERS` is every request, command and listener the server has, each naming its
method and the snapshot kind it answers from (`analysis/kinds.py`); `dispatch`
(`analysis/handlers.py`) is the one function that calls them. Adding a request is
one entry here and one handler, its answer computed in `qvr_core.ide`. Every process
that serves, the command line and the tests alike, builds the same server here.
"""

from __future__ import annotations

from functools import partial
from typing import Final

from lsprotocol import types as lsp

from qvr_lsp.analysis.analyzer import DEBOUNCE_SECONDS, Analyzer
from qvr_lsp.analysis.handlers import (
    Command,
    Entry,
    Listener,
    Request,
    deferred_imports,
    handler_modules,
    serve,
)
from qvr_lsp.analysis.kinds import (
    CARRIED,
    CURRENT_TEXT,
    DIAGNOSED,
    DOCUMENT,
    LAST_TABLES,
    SENT_TEXT,
    STRUCTURE,
    WORKSPACE,
)
from qvr_lsp.analysis.scans import Scans
from qvr_lsp.analysis.session import Session
from qvr_lsp.analysis.warmup import Warmup
from qvr_lsp.features import (
    code_actions,
    codelens,
    commands,
    completion,
    diagnostics,
    folding,
    formatting,
    hover,
    inlay_hints,
    large_documents,
    navigation,
    pull_diagnostics,
    rename,
    selection,
    semantic_tokens,
    signature_help,
    status,
    symbols,
    workspace_symbols,
)
from qvr_lsp.protocol import contract
from qvr_lsp.protocol.server import QvrLanguageServer
from qvr_lsp.runs import run_inference

#: Every request, command and listener of the server: method, snapshot kind, handler.
#: `Final` and no type: each entry's type is then inferred from its own arguments, so
#: mypy checks that the view its kind gives is the one its handler takes (against a
#: declared `tuple[Entry, ...]`, whose entries are `Request[Any, Any, Any]`, it would not).
HANDLERS: Final = (
    # -- answered from the analysis of the text the client has now
    Request(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        CURRENT_TEXT,
        code_actions.code_actions,
        empty=list,
        options=code_actions.OPTIONS,
        deferred=code_actions.DEFERRED,
    ),
    Request(lsp.TEXT_DOCUMENT_FOLDING_RANGE, CURRENT_TEXT, folding.folding, empty=list),
    Request(
        lsp.TEXT_DOCUMENT_INLAY_HINT,
        CURRENT_TEXT,
        inlay_hints.hints,
        empty=list,
        deferred=inlay_hints.DEFERRED,
    ),
    Request(
        lsp.TEXT_DOCUMENT_PREPARE_RENAME, CURRENT_TEXT, rename.prepare, unready=rename.not_ready
    ),
    Request(lsp.TEXT_DOCUMENT_RENAME, CURRENT_TEXT, rename.rename_symbol, unready=rename.not_ready),
    Request(lsp.TEXT_DOCUMENT_SELECTION_RANGE, CURRENT_TEXT, selection.selection, empty=list),
    Request(
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
        CURRENT_TEXT.after_pause(),
        semantic_tokens.full,
        empty=semantic_tokens.nothing,
        options=semantic_tokens.LEGEND,
    ),
    Request(
        lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE,
        CURRENT_TEXT,
        semantic_tokens.in_range,
        empty=semantic_tokens.nothing,
        options=semantic_tokens.LEGEND,
    ),
    # -- at a position of the text the request was sent for
    Request(lsp.TEXT_DOCUMENT_HOVER, CARRIED, hover.hover, deferred=hover.DEFERRED),
    Request(lsp.TEXT_DOCUMENT_DEFINITION, SENT_TEXT, navigation.definition, empty=list),
    Request(lsp.TEXT_DOCUMENT_REFERENCES, SENT_TEXT, navigation.references, empty=list),
    Request(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT, SENT_TEXT, navigation.highlight, empty=list),
    # -- the declarations of the newest text that parsed
    Request(
        lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
        STRUCTURE.after_pause(),
        symbols.document_symbol,
        empty=list,
    ),
    Request(
        lsp.TEXT_DOCUMENT_CODE_LENS,
        STRUCTURE,
        codelens.code_lens,
        empty=list,
        options=codelens.OPTIONS,
    ),
    # -- at once, from what is known
    Request(
        lsp.TEXT_DOCUMENT_COMPLETION,
        LAST_TABLES,
        completion.completion,
        empty=completion.nothing,
        options=completion.OPTIONS,
        deferred=completion.DEFERRED,
    ),
    Request(
        lsp.TEXT_DOCUMENT_SIGNATURE_HELP,
        LAST_TABLES,
        signature_help.help_,
        options=signature_help.OPTIONS,
        deferred=signature_help.DEFERRED,
    ),
    # -- the text alone
    Request(
        lsp.TEXT_DOCUMENT_FORMATTING,
        DOCUMENT,
        formatting.formatting,
        empty=list,
        deferred=formatting.DEFERRED,
    ),
    Request(
        lsp.TEXT_DOCUMENT_RANGE_FORMATTING,
        DOCUMENT,
        formatting.range_formatting,
        empty=list,
        deferred=formatting.DEFERRED,
    ),
    # -- diagnostics: pushed for each analysis, or pulled
    Listener(on_analysis=diagnostics.publish, on_close=diagnostics.clear),
    Listener(on_analysis=large_documents.tell, on_close=large_documents.forget),
    Listener(on_analysis=pull_diagnostics.refresh_later, on_close=pull_diagnostics.forget),
    Request(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        DIAGNOSED,
        pull_diagnostics.document_diagnostic,
        options=pull_diagnostics.OPTIONS,
    ),
    # -- the workspace and the server
    Request(lsp.WORKSPACE_DIAGNOSTIC, WORKSPACE, pull_diagnostics.workspace_diagnostic),
    Request(lsp.WORKSPACE_SYMBOL, WORKSPACE, workspace_symbols.workspace_symbol, empty=list),
    Request(contract.SERVER_STATUS, WORKSPACE, status.server_status, empty=dict),
    # -- workspace/executeCommand
    Command(contract.DIAGRAM, commands.diagram, deferred=commands.DEFERRED),
    Command(contract.EXPORT_PROGRAM, commands.export_program, deferred=commands.DEFERRED),
    Command(contract.RUN_INFERENCE, run_inference.run_inference, deferred=run_inference.DEFERRED),
)


def build(table: tuple[Entry, ...] = HANDLERS, *, debounce: float = DEBOUNCE_SECONDS) -> Session:
    """A server serving `table`: its analyzer hears its documents and settings, the runs
    stop with it, and the handlers' deferred imports wait for the first diagnostics."""
    server = QvrLanguageServer()
    analyzer = Analyzer(server.documents, debounce=debounce)
    session = Session(server, analyzer, Scans())
    server.watch(analyzer)
    server.on_settings(session.configure)
    server.on_shutdown(analyzer.shutdown)
    server.on_shutdown(session.scans.shutdown)
    server.on_stop(partial(run_inference.stop, session))  # no worker outlives the server
    server.on_stop(analyzer.shutdown)
    server.on_stop(session.scans.shutdown)
    session.preparer = run_inference.prepare
    serve(session, table)
    session.feature_modules = handler_modules(table)
    session.warmup = Warmup(deferred_imports(table))
    analyzer.on_analysis(session.warmup.start_soon)  # after every listener of the table
    return session


def build_server(*, debounce: float = DEBOUNCE_SECONDS) -> QvrLanguageServer:
    """The server of `build()` (what the command line starts)."""
    return build(debounce=debounce).server
