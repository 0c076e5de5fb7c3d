"""docs/server.md's feature table: each named test exists, the server advertises each feature."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from lsprotocol import types as lsp

ROOT = Path(__file__).resolve().parents[2]
TABLE = (ROOT / "docs" / "server.md").read_text()
ROWS = re.findall(r"^\| (.+?) \| .+? \| `(tests/[^`]+\.py)::(\w+)` \|$", TABLE, re.MULTILINE)

#: feature (first column) -> how the server advertises it
ADVERTISED = {
    "diagnostics": lambda c: c.text_document_sync is not None,
    "hover": lambda c: c.hover_provider,
    "definition": lambda c: c.definition_provider,
    "references": lambda c: c.references_provider,
    "document highlight": lambda c: c.document_highlight_provider,
    "document symbols": lambda c: c.document_symbol_provider,
    "workspace symbols": lambda c: c.workspace_symbol_provider,
    "completion": lambda c: c.completion_provider,
    "rename, prepareRename": lambda c: (
        isinstance(c.rename_provider, lsp.RenameOptions) and c.rename_provider.prepare_provider
    ),
    "code actions": lambda c: c.code_action_provider,
    "migrate file (source action)": lambda c: (
        "source.migrate" in c.code_action_provider.code_action_kinds
    ),
    "inlay hints": lambda c: c.inlay_hint_provider,
    "signature help": lambda c: "(" in c.signature_help_provider.trigger_characters,
    "semantic tokens (full, range)": lambda c: (
        c.semantic_tokens_provider.full and c.semantic_tokens_provider.range
    ),
    "formatting": lambda c: c.document_formatting_provider,
    "range formatting": lambda c: c.document_range_formatting_provider,
    "folding ranges": lambda c: c.folding_range_provider,
    "selection ranges": lambda c: c.selection_range_provider,
    "code lens": lambda c: c.code_lens_provider,
    "`qvr.diagram`": lambda c: "qvr.diagram" in c.execute_command_provider.commands,
    "`qvr.runInference`": lambda c: "qvr.runInference" in c.execute_command_provider.commands,
}


def test_the_table_has_a_row_per_feature() -> None:
    assert len(ROWS) >= 20
    names = {row[0] for row in ROWS}
    assert set(ADVERTISED) <= names


@pytest.mark.parametrize(("feature", "path", "test"), ROWS, ids=[r[0] for r in ROWS])
def test_each_row_names_a_test_that_exists(feature: str, path: str, test: str) -> None:
    source = (ROOT / path).read_text()
    functions = {
        node.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    assert test in functions, f"{feature}: {path}::{test} does not exist"


@pytest.mark.asyncio(loop_scope="session")
async def test_the_server_advertises_every_protocol_feature_in_the_table(client):
    caps = client.server_capabilities
    missing = [name for name, advertised in ADVERTISED.items() if not advertised(caps)]
    assert missing == []
