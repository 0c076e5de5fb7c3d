"""A large document gets diagnostics, checked outside the server, and nothing expensive;
the user is told once (issue 18)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp

from qvr_lsp.analysis.analyzer import LARGE_DOCUMENT_CHARS
from tests.lsp.support import change, diagnostics_for
from tests.lsp_depth.support import doc, opened

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: Declarations at the top: what hover, tokens, folding, the outline, inlay hints and
#: formatting would answer for (the text is not formatted) were the document not large.
BLOCKS = 20


def large_text(chars: int = LARGE_DOCUMENT_CHARS, *, padded: bool = True) -> str:
    """Just over `chars` (by default the limit), with one error near the end.

    The server decides by length alone (`analysis.is_large`), so past `BLOCKS`
    declarations a `padded` text is comment lines: the check in the child (run for the
    opening and again for the edit, for each client) then takes a fraction of a second
    instead of seconds, and the error after them still shows the whole text was checked.
    Not `padded`, declarations fill it: a check that takes seconds and memory in
    proportion (tests/security/test_large_check_child.py needs both).
    """
    block = (
        "morphism embed_{i} : Token -> Hidden [role=embed]\n"
        "let path_{i} = embed_{i} >> cell\n"
        "program p_{i} : Token -> Hidden\n"
        "    sample h <- path_{i}\n"
        "    return h\n"
    )
    head = (
        "object Token : FinSet 8\nobject Hidden : Real 4\n"
        "morphism cell : Hidden -> Hidden [role=kernel] ~ Normal\n"
    )
    parts, size, i = [head], len(head), 0
    while size <= chars and (i < BLOCKS or not padded):
        part = block.format(i=i)
        parts.append(part)
        size += len(part)
        i += 1
    padding = "# " + "padding " * 12 + "\n"
    parts.append(padding * max(0, (chars - size) // len(padding) + 1))
    return "".join(parts) + "let broken = embed_0 >> missing\n"


def notices(client) -> list[str]:
    return [m.message for m in client.messages if " is large " in m.message]


async def notice_count(client, at_least: int) -> int:
    """How many notices came, waiting a little for one sent after the diagnostics."""
    for _ in range(100):
        if len(notices(client)) >= at_least:
            break
        await asyncio.sleep(0.05)
    return len(notices(client))


async def test_a_large_document_gets_diagnostics_only_and_one_notice(client):
    text = large_text()
    assert len(text) > LARGE_DOCUMENT_CHARS
    before = len(notices(client))
    uri, published = await opened(client, text, "large")
    assert any("missing" in d.message for d in published.diagnostics)
    assert await notice_count(client, before + 1) == before + 1

    ident = doc(uri)
    at = lsp.Position(3, 10)
    assert await client.text_document_hover_async(lsp.HoverParams(ident, at)) is None
    tokens = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(ident))
    assert tokens is None or not tokens.data
    assert not await client.text_document_folding_range_async(lsp.FoldingRangeParams(ident))
    assert not await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident))
    assert not await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(ident, lsp.Range(lsp.Position(0, 0), lsp.Position(40, 0)))
    )
    options = lsp.FormattingOptions(tab_size=4, insert_spaces=True)
    assert not await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(ident, options)
    )

    # an edit: diagnostics of the new version, and no second notice
    end = text.count("\n")
    fix = lsp.Range(lsp.Position(end - 1, 0), lsp.Position(end, 0))
    change(client, uri, 2, fix, "")
    params = await diagnostics_for(client, uri, 2, timeout=60)
    assert not any("missing" in d.message for d in params.diagnostics)
    # The notice would be sent by the same announcement as these diagnostics, so it is
    # ahead of the answer to any request sent now: a round trip, not a wait, shows none
    # came. (The document is still large: hover still declines.)
    assert await client.text_document_hover_async(lsp.HoverParams(ident, at)) is None
    assert len(notices(client)) == before + 1
