"""Random edits against the running server: every version gets its diagnostics, it stays up.

The test keeps its own copy of the text, applies the same edits, and checks
that what the server published for each version is exactly what the core
says about that text: so incremental sync (UTF-16 ranges, CRLF, U+2028,
tabs, astral characters) cannot drift without failing here.
"""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from qvr_core.check import check
from qvr_lsp.protocol.convert import UTF16, TextPositions, to_lsp_diagnostic
from tests.lsp.support import (
    CONFIG,
    EXAMPLES,
    RecordingClient,
    change,
    diagnostics_for,
    fresh_uri,
    initialize_params,
    open_document,
    versions_published,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SEEDS = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("**/*.qvr"))]
SNIPPETS = [
    "\t",
    "\r\n",
    "\r",
    "\n",
    "\u2028",
    "\x0c",
    "😀",
    "隠れ",
    "#! doc ",
    "    sample h <- backbone\n",
    "object Big : Real 99999999999999999999\n",
    "(" * 200,
    ">> " * 300,
    "x" * 5000,
    "let q = " + " >> ".join(["tok_embed"] * 400) + "\n",
    *{line + "\n" for text in SEEDS for line in text.splitlines() if line.strip()},
]

inserts = st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=12))
edits = st.tuples(
    st.floats(0, 1), st.floats(0, 1), st.one_of(st.just(""), inserts)
)  # start, end (fractions of the text), new text: "" is a cut


@pytest_lsp.fixture(config=CONFIG, scope="module")
async def server(lsp_client: RecordingClient):
    await lsp_client.initialize_session(initialize_params("vscode"))
    yield
    await lsp_client.shutdown_session()


def expected(text: str, uri: str) -> list[tuple]:
    """What the server should publish for `text`, as comparable tuples."""
    positions = TextPositions(text, UTF16)
    return [_key(to_lsp_diagnostic(d, positions, uri)) for d in check(text).diagnostics]


def _key(d: lsp.Diagnostic) -> tuple:
    r = d.range
    return (d.code, r.start.line, r.start.character, r.end.line, r.end.character, d.message)


def apply(text: str, start: float, end: float, insert: str) -> tuple[str, lsp.Range]:
    a, b = sorted((int(start * len(text)), int(end * len(text))))
    positions = TextPositions(text, UTF16)
    rng = lsp.Range(positions.position(a), positions.position(b))
    # The server applies the range as the protocol defines it; do the same here.
    a, b = positions.offsets(rng)
    return text[:a] + insert + text[b:], rng


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
@given(
    seed=st.sampled_from(SEEDS), steps=st.lists(edits, min_size=1, max_size=6), burst=st.booleans()
)
async def test_random_edits_always_get_their_diagnostics(server, seed, steps, burst):
    uri = fresh_uri("fuzz")
    text = seed
    open_document(server, uri, text)
    await diagnostics_for(server, uri, 1)
    for version, (start, end, insert) in enumerate(steps, start=2):
        text, rng = apply(text, start, end, insert)
        change(server, uri, version, rng, insert)
        if not burst:
            params = await diagnostics_for(server, uri, version)
            assert params.version == version
            assert [_key(d) for d in params.diagnostics] == expected(text, uri)
    last = len(steps) + 1
    params = await diagnostics_for(server, uri, last)
    assert params.version == last
    assert [_key(d) for d in params.diagnostics] == expected(text, uri)
    seen = versions_published(server, uri)
    assert seen == sorted(seen)
    server.text_document_did_close(
        lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri))
    )


async def test_requests_about_unknown_documents_and_positions_answer_empty(server):
    ghost = lsp.TextDocumentIdentifier(fresh_uri("ghost"))
    far = lsp.Position(10**6, 10**6)
    assert (
        await server.text_document_hover_async(lsp.HoverParams(text_document=ghost, position=far))
        is None
    )
    assert (
        await server.text_document_definition_async(
            lsp.DefinitionParams(text_document=ghost, position=far)
        )
        == []
    )
    completion = await server.text_document_completion_async(
        lsp.CompletionParams(text_document=ghost, position=far)
    )
    assert completion is not None and list(completion.items) == []

    uri = fresh_uri("far")
    open_document(server, uri, "object A : Real 2\n")
    await diagnostics_for(server, uri, 1)
    doc = lsp.TextDocumentIdentifier(uri)
    assert (
        await server.text_document_hover_async(lsp.HoverParams(text_document=doc, position=far))
        is None
    )
    symbols = await server.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=doc)
    )
    assert [s.name for s in symbols] == ["A"]


async def test_a_change_to_a_document_that_is_not_open_is_ignored(server):
    uri = fresh_uri("never-opened")
    change(server, uri, 5, None, "object A : Real 2\n")
    await asyncio.sleep(0.2)
    assert versions_published(server, uri) == []
    status = await server.protocol.send_request_async("qvr/serverStatus", None)
    assert status.version  # still answering
