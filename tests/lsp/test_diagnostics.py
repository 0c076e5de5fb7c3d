"""Diagnostics over the protocol: on open, after edits, versions, settings, encodings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from qvr_core.text import rules
from qvr_lsp.protocol.convert import SEVERITY
from tests.lsp.support import (
    EXAMPLES,
    change,
    codes,
    diagnostics_for,
    example,
    fresh_uri,
    open_document,
    position_of,
    versions_published,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

# an export rule's example (QVR7xx) shows its code only under a target setting
# (tests/lsp_commands/test_export.py opens it with one)
ERROR_EXAMPLES = sorted(
    p.name for p in (EXAMPLES / "errors").glob("QVR*.qvr") if not p.name.startswith("QVR7")
)


@pytest.mark.parametrize("name", ERROR_EXAMPLES)
async def test_each_error_example_reports_its_code_on_open(client, name: str):
    uri = fresh_uri(name.removesuffix(".qvr"))
    open_document(client, uri, example(f"errors/{name}"), version=7)
    params = await diagnostics_for(client, uri, 7)
    assert params.version == 7
    assert name.split("_")[0] in codes(params)
    assert all(d.source == "qvr" for d in params.diagnostics)
    for d in params.diagnostics:  # severity and tags as the code's rule declares them
        rule = rules.lookup(str(d.code))
        assert rule is not None
        assert d.severity == SEVERITY[rule.severity]
        assert (lsp.DiagnosticTag.Unnecessary in (d.tags or ())) == rule.unnecessary


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.qvr")))
async def test_seed_examples_have_no_errors(client, name: str):
    uri = fresh_uri(Path(name).stem)
    open_document(client, uri, example(name))
    params = await diagnostics_for(client, uri, 1)
    assert [d for d in params.diagnostics if d.severity == lsp.DiagnosticSeverity.Error] == []


async def test_dimension_mismatch_has_narrow_range_and_related_declarations(client):
    text = example("errors/QVR201_dimension_mismatch.qvr")
    uri = fresh_uri("qvr201")
    open_document(client, uri, text)
    (d,) = [d for d in (await diagnostics_for(client, uri, 1)).diagnostics if d.code == "QVR201"]
    assert d.severity == lsp.DiagnosticSeverity.Error
    assert "64 + 64 = 128" in d.message and "96" in d.message
    line = text.splitlines()[d.range.start.line]
    assert line.startswith("let backbone")
    assert d.range.end.character - d.range.start.character < len(line)
    related = d.related_information or []
    assert {r.location.uri for r in related} == {uri}
    assert any("Combined" in r.message for r in related)


async def test_unused_declaration_is_tagged_unnecessary(client):
    uri = fresh_uri("qvr103")
    open_document(client, uri, example("errors/QVR103_unused.qvr"))
    (d,) = [d for d in (await diagnostics_for(client, uri, 1)).diagnostics if d.code == "QVR103"]
    assert d.severity == lsp.DiagnosticSeverity.Hint
    assert list(d.tags or ()) == [lsp.DiagnosticTag.Unnecessary]


async def test_quick_fixes_travel_in_diagnostic_data(client):
    text = example("errors/QVR101_undefined_name.qvr")
    uri = fresh_uri("qvr101")
    open_document(client, uri, text)
    (d,) = [d for d in (await diagnostics_for(client, uri, 1)).diagnostics if d.code == "QVR101"]
    (fix, *_) = d.data["fixes"]
    assert fix["title"] == "Change to 'cell'"
    (edit,) = fix["edits"]
    assert edit["newText"] == "cell"
    assert edit["range"]["start"] == {
        "line": d.range.start.line,
        "character": d.range.start.character,
    }


async def test_edits_republish_with_each_version(client):
    text = example("bidirectional_rnn_lm.qvr")
    uri = fresh_uri("edits")
    open_document(client, uri, text)
    assert "QVR201" not in codes(await diagnostics_for(client, uri, 1))

    # Real 128 -> Real 96: the fan no longer fits `combine`.
    start = position_of(text, "Real 128", delta=5)
    rng = lsp.Range(start, lsp.Position(start.line, start.character + 3))
    change(client, uri, 2, rng, "96")
    assert "QVR201" in codes(await diagnostics_for(client, uri, 2))

    rng = lsp.Range(start, lsp.Position(start.line, start.character + 2))
    change(client, uri, 3, rng, "128")
    params = await diagnostics_for(client, uri, 3)
    assert params.version == 3 and "QVR201" not in codes(params)


async def test_a_burst_of_edits_never_publishes_a_stale_version_last(client):
    text = example("vanilla_rnn_lm.qvr")
    uri = fresh_uri("burst")
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    end = position_of(text, "export vanilla_rnn_lm", delta=len("export vanilla_rnn_lm"))
    for version in range(2, 32):
        change(client, uri, version, lsp.Range(end, end), " " if version % 2 else "")
        if version % 7 == 0:
            await asyncio.sleep(0.03)  # let some analyses start before the next edit
    last = await diagnostics_for(client, uri, 31)
    await asyncio.sleep(0.3)  # anything still in flight would arrive now
    seen = versions_published(client, uri)
    assert seen == sorted(seen), seen
    assert seen[-1] == 31 and last.version == 31


async def test_a_syntax_error_is_reported_from_the_newest_text(client):
    text = example("vanilla_rnn_lm.qvr")
    uri = fresh_uri("syntax")
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    at = position_of(text, "-> Embedded [role=embed]")
    change(client, uri, 2, lsp.Range(at, lsp.Position(at.line, at.character + 2)), "")
    params = await diagnostics_for(client, uri, 2)
    assert "QVR001" in codes(params)
    assert any(d.range.start.line == at.line for d in params.diagnostics if d.code == "QVR001")


async def test_close_clears_diagnostics(client):
    uri = fresh_uri("close")
    open_document(client, uri, example("errors/QVR101_undefined_name.qvr"))
    await diagnostics_for(client, uri, 1)
    client.text_document_did_close(
        lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri))
    )
    for _ in range(500):
        if client.published[-1].uri == uri and not client.published[-1].diagnostics:
            break
        await asyncio.sleep(0.01)
    assert list(client.diagnostics[uri]) == []


async def test_non_ascii_comments_do_not_shift_ranges(client):
    # U+1F600 is two UTF-16 units, CJK one each: the range must count them as the client does.
    text = (
        example("errors/QVR101_undefined_name.qvr")
        .replace(
            "let backbone = tok_embed >> scan(cel)",
            "let backbone = tok_embed >> scan(cel) # 😀 隠れ状態",
        )
        .replace("# QVR101", "# 😀😀 QVR101 — ünïcode")
    )
    uri = fresh_uri("unicode")
    open_document(client, uri, text)
    (d,) = [d for d in (await diagnostics_for(client, uri, 1)).diagnostics if d.code == "QVR101"]
    start = position_of(text, "cel)")
    assert d.range.start == start
    assert d.range.end == lsp.Position(start.line, start.character + 3)


async def test_strict_setting_turns_dimension_matches_into_errors(client):
    uri = fresh_uri("strict")
    open_document(client, uri, example("bidirectional_rnn_lm.qvr"))

    def severity_of_203(params: lsp.PublishDiagnosticsParams) -> lsp.DiagnosticSeverity | None:
        return next((d.severity for d in params.diagnostics if d.code == "QVR203"), None)

    assert severity_of_203(await diagnostics_for(client, uri, 1)) == lsp.DiagnosticSeverity.Hint
    before = len(client.published)
    try:
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"qvr": {"strict": True}})
        )
        for _ in range(1000):
            fresh = [p for p in client.published[before:] if p.uri == uri]
            if fresh:
                break
            await asyncio.sleep(0.01)
        assert fresh and fresh[0].version == 1
        assert severity_of_203(fresh[0]) == lsp.DiagnosticSeverity.Error
    finally:
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"qvr": {"strict": False}})
        )
