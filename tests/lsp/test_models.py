"""Bayesian models over the protocol: plate-shaped hover, data variables, family help."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.check.test_models import EIGHT_SCHOOLS
from tests.lsp.support import codes, diagnostics_for, fresh_uri, open_document, position_of

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def _open(client, text: str) -> str:  # type: ignore[no-untyped-def]
    uri = fresh_uri("schools")
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    return uri


async def _hover(client, uri: str, text: str, needle: str) -> str:  # type: ignore[no-untyped-def]
    result = await client.text_document_hover_async(
        lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            position=position_of(text, needle, delta=1),
        )
    )
    assert result is not None, needle
    return result.contents.value


async def test_hover_shows_a_plate_shaped_type_and_data_as_data(client):
    uri = await _open(client, EIGHT_SCHOOLS)
    value = await _hover(client, uri, EIGHT_SCHOOLS, "theta_raw :")
    assert "sample theta_raw : School -> R" in value
    assert "one `R` per School (8)" in value
    data = await _hover(client, uri, EIGHT_SCHOOLS, "sigma)")
    assert "data sigma : rows -> R" in data
    assert "its value comes from the data when the model is fitted" in data
    family = await _hover(client, uri, EIGHT_SCHOOLS, "HalfCauchy")
    assert "HalfCauchy(scale)" in family and "a positive number" in family


async def test_outline_lists_data_variables_as_data(client):
    uri = await _open(client, EIGHT_SCHOOLS)
    result = await client.text_document_document_symbol_async(
        lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri))
    )
    program = next(s for s in result if s.name == "eight_schools")
    steps = {s.name: s for s in program.children or []}
    assert steps["sigma"].detail == "data: rows -> R"
    assert steps["theta_raw"].detail == "School -> R"


async def test_signature_help_and_completion_of_a_family_while_typing(client):
    text = EIGHT_SCHOOLS.replace("    return mu\n", "    sample nu <- HalfCauchy(\n    return mu\n")
    uri = await _open(client, text)
    position = position_of(text, "HalfCauchy(\n", delta=len("HalfCauchy("))
    help_ = await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(text_document=lsp.TextDocumentIdentifier(uri), position=position)
    )
    assert help_ is not None and help_.signatures[0].label == "HalfCauchy(scale)"
    items = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=lsp.TextDocumentIdentifier(uri), position=position)
    )
    labels = {i.label for i in (items.items if items else [])}
    assert "scale=" in labels  # the family's parameter by keyword
    assert {"mu", "tau"} <= labels  # values bound above


async def test_a_literal_outside_its_constraint_is_published(client):
    text = EIGHT_SCHOOLS.replace("HalfCauchy(scale=5.0)", "HalfCauchy(scale=-5.0)")
    uri = fresh_uri("schools")
    open_document(client, uri, text)
    params = await diagnostics_for(client, uri, 1)
    assert codes(params) == ["QVR312"]
