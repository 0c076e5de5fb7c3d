"""A hover sent right after an edit: answered from the last built tables only where they hold.

Right after an edit's diagnostics the new text's tables are still pending,
and the server answers a hover on a declaration the edit left alone from the
tables of the text before (`qvr_core.ide.carried`). Every answer here is
compared with the hover of the same text opened anew, whose tables are built
from scratch: below an edit that moved lines, inside the edited declaration,
and on a use of a name whose type the edit changed.
"""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.lsp.support import change, diagnostics_for, example, fresh_uri, open_document

pytestmark = pytest.mark.asyncio(loop_scope="module")

BIRNN = example("bidirectional_rnn_lm.qvr")


def offset_of(text: str, needle: str, within: str | None = None) -> int:
    return text.index(needle, text.index(within) if within is not None else 0)


def position(text: str, offset: int) -> lsp.Position:
    return lsp.Position(text.count("\n", 0, offset), offset - (text.rfind("\n", 0, offset) + 1))


async def hover(client, uri: str, text: str, needle: str, within: str | None = None):
    at = offset_of(text, needle, within) + 1
    return await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), position(text, at))
    )


async def opened(client, label: str, text: str) -> str:
    """A new document with `text`, its diagnostics in and its tables built (by a hover)."""
    uri = fresh_uri(label)
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    await hover(client, uri, text, "let backbone")
    return uri


async def edited(client, uri: str, text: str, at: int, end: int, new: str, version: int) -> str:
    """Replace [at, end) of `text` by `new` in the document; its text once diagnosed."""
    rng = lsp.Range(position(text, at), position(text, end))
    change(client, uri, version, rng, new)
    await diagnostics_for(client, uri, version)
    return text[:at] + new + text[end:]


async def as_rebuilt(client, text: str, needle: str, within: str | None = None):
    """The hover of `text` opened anew, its tables built from scratch."""
    uri = await opened(client, "rebuilt", text)
    return await hover(client, uri, text, needle, within)


async def test_a_hover_below_lines_an_edit_inserted_is_the_rebuilt_answer(client):
    uri = await opened(client, "moved", BIRNN)
    at = BIRNN.index("morphism fwd_cell")
    text = await edited(client, uri, BIRNN, at, at, "# two lines\n# of comment\n", 2)
    for needle, within in [("bwd_cell", "let backward_path"), ("backward_path", None)]:
        found = await hover(client, uri, text, needle, within)
        assert found is not None
        assert found == await as_rebuilt(client, text, needle, within)
    found = await hover(client, uri, text, "bwd_cell", "let backward_path")
    line = text.count("\n", 0, text.index("morphism bwd_cell")) + 1
    assert isinstance(found.contents, lsp.MarkupContent)
    assert f"declared on line {line}" in found.contents.value


async def test_a_hover_in_the_edited_declaration_reflects_the_new_text(client):
    uri = await opened(client, "inside", BIRNN)
    at = offset_of(BIRNN, "scan(bwd_cell)", "let backward_path") + len("scan(")
    text = await edited(client, uri, BIRNN, at, at + len("bwd_cell"), "fwd_cell", 2)
    found = await hover(client, uri, text, "backward_path =")
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    assert "FwdHidden" in found.contents.value
    assert found == await as_rebuilt(client, text, "backward_path =")
    # a use of the changed name in another declaration follows it too
    use = await hover(client, uri, text, "backward_path", "let backbone")
    assert use == await as_rebuilt(client, text, "backward_path", "let backbone")


async def test_hovers_after_each_of_several_edits_are_the_rebuilt_answers(client):
    uri = await opened(client, "several", BIRNN)
    text = BIRNN
    for version, new in enumerate(["\n", "# note\n", "\n\n"], start=2):
        at = text.index("let forward_path")
        text = await edited(client, uri, text, at, at, new, version)
        for needle, within in [("tok_embed", "let backward_path"), ("combine", "let backbone")]:
            found = await hover(client, uri, text, needle, within)
            assert found is not None
            assert found == await as_rebuilt(client, text, needle, within)
