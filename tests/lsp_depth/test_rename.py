"""Rename over the protocol: prepareRename, round trips, program scope, refusals."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.lsp.support import TWO_PROGRAMS, example, position_of
from tests.lsp_depth.support import (
    EXAMPLES,
    apply_text_edits,
    doc,
    edits_of,
    errors,
    opened,
    touched,
)

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def rename(client, uri: str, text: str, position: lsp.Position, new: str) -> str:
    result = await client.text_document_rename_async(
        lsp.RenameParams(text_document=doc(uri), position=position, new_name=new)
    )
    assert result is not None
    assert touched(result) == {uri}
    return apply_text_edits(text, edits_of(result, uri))


async def test_prepare_rename_gives_the_name_and_its_range(client):
    text = example("vanilla_rnn_lm.qvr")
    uri, _ = await opened(client, text, "prepare")
    result = await client.text_document_prepare_rename_async(
        lsp.PrepareRenameParams(
            text_document=doc(uri), position=position_of(text, "cell)", delta=2)
        )
    )
    assert isinstance(result, lsp.PrepareRenamePlaceholder)
    assert result.placeholder == "cell"
    assert result.range.start == position_of(text, "cell)")
    assert result.range.end == position_of(text, "cell)", delta=4)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
async def test_rename_round_trips_on_every_example(client, path):
    text = path.read_text()
    uri, _ = await opened(client, text, f"round-{path.stem}")
    # the first top-level let (`define` in quivers 0.15 and later)
    found = re.search(r"\n(let|define) ", text)
    assert found is not None
    keyword = found.group(1)
    first_let = position_of(text, found.group(0), delta=len(found.group(0)))
    name = text[found.end() :].split(" ", 1)[0]
    there = await rename(client, uri, text, first_let, "renamed_thing")
    assert "renamed_thing" in there and f"{keyword} {name} " not in there
    uri2, published = await opened(client, there, f"round-{path.stem}-b")
    assert errors(published) == []
    back = await rename(client, uri2, there, first_let, name)
    assert back == text


async def test_a_program_local_rename_stays_in_its_program(client):
    uri, _ = await opened(client, TWO_PROGRAMS, "local")
    second_h = position_of(TWO_PROGRAMS, "h <- encode", 1)
    after = await rename(client, uri, TWO_PROGRAMS, second_h, "g")
    first, second = after.split("program second")
    assert "sample h <- encode" in first and "lm_head(h)" in first
    assert "sample g <- encode" in second and "lm_head(g)" in second


@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ("observe", "keyword"),
        ("9lives", "not an identifier"),
        ("lm head", "not an identifier"),
        ("lm_head", "already declared"),
        ("FinSet", "type constructor"),
    ],
)
async def test_refusals_come_back_as_errors_with_the_reason(client, new, reason):
    text = example("vanilla_rnn_lm.qvr")
    uri, _ = await opened(client, text, "refuse")
    with pytest.raises(JsonRpcException, match=reason):
        await client.text_document_rename_async(
            lsp.RenameParams(
                text_document=doc(uri), position=position_of(text, "cell :"), new_name=new
            )
        )


async def test_a_local_cannot_take_the_name_of_another_local_of_its_program(client):
    uri, _ = await opened(client, TWO_PROGRAMS, "local-collide")
    first_h = position_of(TWO_PROGRAMS, "h <- encode")
    with pytest.raises(JsonRpcException, match="'y' is already bound in program first"):
        await client.text_document_rename_async(
            lsp.RenameParams(text_document=doc(uri), position=first_h, new_name="y")
        )


async def test_prepare_rename_on_a_keyword_is_refused(client):
    text = example("vanilla_rnn_lm.qvr")
    uri, _ = await opened(client, text, "prepare-keyword")
    with pytest.raises(JsonRpcException, match="nothing to rename"):
        await client.text_document_prepare_rename_async(
            lsp.PrepareRenameParams(text_document=doc(uri), position=position_of(text, "program"))
        )
