"""A model program with an improper prior (`Flat`) in the real server: no "Prior
predictive" lens (its prior has no draws), and a prior run asked for anyway is refused
with the site's line before anything is drawn."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types as lsp

from tests.lsp_commands.conftest import open_file, without_spare
from tests.lsp_commands.test_run_inference import failure

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = without_spare()  # the spare is not this module's subject (conftest)

FLAT = """\
object Row : FinSet 4

program line : Row -> Row
    sample a <- Flat
    sample sigma <- HalfFlat
    observe y : Row <- Normal(a, sigma)
    return a

export line
"""


async def test_no_prior_predictive_lens_and_a_prior_run_is_refused(client, workspace):
    path = workspace / "line.qvr"
    path.write_text(FLAT, encoding="utf-8")
    (workspace / "line.json").write_text(json.dumps({"y": [0.1, 0.4, -0.2, 0.3]}))
    uri = open_file(client, path)
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
    )
    titles = [lens.command.title for lens in lenses if lens.command]
    assert titles == ["Run inference", "Show diagram"]
    error = await failure(
        client, {"uri": uri, "program": "line", "method": "prior", "data": "line.json"}
    )
    assert "line 4, sample a <- Flat is an improper prior" in str(error)
    assert "prior predictive (--method prior) does not exist" in str(error)
