"""Formatting a large pasted file runs off the event loop: other requests are answered
meanwhile, and a formatting request overtaken by an edit answers no edits (issue 18)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp

from tests.lsp.support import change, position_of
from tests.lsp_depth.support import apply_text_edits, doc, opened

pytestmark = pytest.mark.asyncio(loop_scope="session")
TINY = "object A : Real 2\nmorphism f : A -> A\n"
OPTIONS = lsp.FormattingOptions(tab_size=4, insert_spaces=True)


def pasted(blocks: int) -> str:
    """A file pasted from elsewhere: groups not separated, spacing not the canonical one."""
    lines = ["object T:FinSet 8", "object H:Real 4"]
    for i in range(blocks):
        lines += [
            f"morphism f_{i}:T->H[role=embed]",
            f"morphism g_{i}:H->H  ~ Normal",
            f"let l_{i}=f_{i}>>g_{i}",
            f"program p_{i}:T->H",
            f"  sample h<-l_{i}",
            "  return h",
            f"export p_{i}",
        ]
    return "\n".join(lines) + "\n"


LARGE = pasted(400)  # 2,800 lines, each needing an edit


async def test_a_hover_in_another_file_is_answered_before_a_long_formatting(client):
    large, _ = await opened(client, LARGE, "format-large")
    tiny, _ = await opened(client, TINY, "format-tiny")
    hover = lsp.HoverParams(doc(tiny), position_of(TINY, "f :"))
    assert await client.text_document_hover_async(hover) is not None  # tables built
    answered: list[str] = []

    async def formatting() -> list[lsp.TextEdit]:
        params = lsp.DocumentFormattingParams(text_document=doc(large), options=OPTIONS)
        edits = await client.text_document_formatting_async(params)
        answered.append("formatting")
        return edits or []

    async def hovering() -> None:
        await client.text_document_hover_async(hover)
        answered.append("hover")

    format_task = asyncio.create_task(formatting())
    await asyncio.sleep(0)  # the formatting request is sent first
    await asyncio.wait_for(asyncio.gather(format_task, hovering()), 60)
    assert answered == ["hover", "formatting"]
    edits = format_task.result()
    assert len(edits) > 1000
    formatted = apply_text_edits(LARGE, edits)
    assert "morphism f_0 : T -> H [role=embed]\n" in formatted


async def test_a_formatting_overtaken_by_an_edit_answers_no_edits(client):
    large, _ = await opened(client, LARGE, "format-overtaken")
    params = lsp.DocumentFormattingParams(text_document=doc(large), options=OPTIONS)
    pending = asyncio.ensure_future(client.text_document_formatting_async(params))
    await asyncio.sleep(0)
    edit = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    change(client, large, 2, edit, "# pasted\n")
    assert not await asyncio.wait_for(pending, 60)
