"""While a document with a hostile line is checked, other files are still answered (#46).

The tokenizer was quadratic on lines like `"\\"\\"\\"...`, and `re` held the
interpreter for the whole of one call: the server's check of 100 KB froze it
for 46 s, every request of every file waiting. The check runs in a thread,
and now gives the interpreter back all along; the hover below is answered
before the hostile document's diagnostics come, so while its check runs (the
ordering is the assertion; `bench/lsp_latency.py` times such hovers, with the
goal of 100 ms).
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp

from qvr_lsp.analysis.analyzer import LARGE_DOCUMENT_CHARS
from tests.lsp.support import (
    WAIT_SECONDS,
    RecordingClient,
    diagnostics_for,
    example,
    fresh_uri,
    open_document,
    position_of,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: 400 KB of `"\\`: checked in the server's own process (under LARGE_DOCUMENT_CHARS), in
#: about a second; before the fix, in some ten minutes.
HOSTILE = '"\\' * 200_000 + "\n"


async def published(client: RecordingClient, uri: str) -> lsp.PublishDiagnosticsParams:
    """The first publication for `uri`, waiting on each notification as it comes."""
    while True:
        for params in client.published:
            if params.uri == uri:
                return params
        await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)


def hostile_published(client: RecordingClient, uri: str) -> bool:
    return any(params.uri == uri for params in client.published)


async def test_a_hover_elsewhere_is_answered_while_a_hostile_line_is_checked(client):
    assert len(HOSTILE) < LARGE_DOCUMENT_CHARS  # not the child's: this process checks it
    text = example("vanilla_rnn_lm.qvr")
    here = fresh_uri("hover-here")
    open_document(client, here, text)
    await diagnostics_for(client, here, 1)
    hover = lsp.HoverParams(
        lsp.TextDocumentIdentifier(here), position_of(text, "backbone =", delta=1)
    )
    assert await client.text_document_hover_async(hover) is not None  # its tables are built

    hostile = fresh_uri("hostile")
    open_document(client, hostile, HOSTILE)
    answer = await asyncio.wait_for(client.text_document_hover_async(hover), WAIT_SECONDS)
    assert answer is not None and "backbone" in str(answer.contents)
    assert not hostile_published(client, hostile)  # answered while the check ran

    found = await asyncio.wait_for(published(client, hostile), WAIT_SECONDS * 4)
    assert any("unexpected character" in d.message for d in found.diagnostics)
    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(hostile))
    )
