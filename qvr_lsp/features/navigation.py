"""Definition, references and document highlight: scope-aware, from the symbol table.

The core resolves every name to a `Symbol` whose `scope` is its program, so a
program's local `h` and another program's `h` are different symbols and
never answer for each other. Each names the `SENT_TEXT` kind: the name under the
cursor is looked up in the analysis of the text the request was sent for, then in
the last that parsed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from qvr_core.check.module import CheckedModule, Reference

if TYPE_CHECKING:
    from qvr_lsp.analysis.kinds import Lookup
    from qvr_lsp.analysis.session import Session


def _reference(module: CheckedModule, offset: int) -> Reference | None:
    return module.symbols.reference_at(offset)


async def definition(
    session: Session, params: lsp.DefinitionParams, at: Lookup
) -> list[lsp.Location]:
    found = at.first(_reference)
    if found is None:
        return []
    analysis, ref = found
    return [lsp.Location(analysis.uri, analysis.positions.range(ref.symbol.span))]


async def references(
    session: Session, params: lsp.ReferenceParams, at: Lookup
) -> list[lsp.Location]:
    found = at.first(_reference)
    if found is None:
        return []
    analysis, ref = found
    include = params.context.include_declaration
    uses = analysis.checked.symbols.references_to(ref.symbol, include)
    return [lsp.Location(analysis.uri, analysis.positions.range(r.span)) for r in uses]


WRITE, READ = lsp.DocumentHighlightKind.Write, lsp.DocumentHighlightKind.Read


async def highlight(
    session: Session, params: lsp.DocumentHighlightParams, at: Lookup
) -> list[lsp.DocumentHighlight]:
    found = at.first(_reference)
    if found is None:
        return []
    analysis, ref = found
    uses = analysis.checked.symbols.references_to(ref.symbol)
    return [
        lsp.DocumentHighlight(analysis.positions.range(r.span), WRITE if r.is_definition else READ)
        for r in uses
    ]
