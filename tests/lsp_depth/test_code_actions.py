"""Quick fixes over the protocol: each, applied through its WorkspaceEdit, clears its diagnostic."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from qvr_core.check import check
from tests.lsp_depth.support import ERROR_EXAMPLES, apply_text_edits, doc, edits_of, errors, opened

pytestmark = pytest.mark.asyncio(loop_scope="session")

FIXABLE = [p for p in ERROR_EXAMPLES if any(d.fixes for d in check(p.read_text()).diagnostics)]
EXTRA = {
    "misspelt-option": "object A : Real 2\n"
    "morphism f : A -> A [role=kernel, scael=0.1] ~ Normal\nlet g = f\nexport g\n",
    "misspelt-role": "object A : Real 2\nmorphism f : A -> A [role=kernal] ~ Normal\n"
    "let g = f\nexport g\n",
    "missing-export-program": "object T : FinSet 4\nobject H : Real 2\n"
    "morphism e : T -> H [role=embed]\nprogram p : T -> H\n    sample h <- e\n    return h\n",
}


async def actions_for(client, uri: str, diagnostic: lsp.Diagnostic) -> list[lsp.CodeAction]:
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=doc(uri),
            range=diagnostic.range,
            context=lsp.CodeActionContext(
                diagnostics=[diagnostic], only=[lsp.CodeActionKind.QuickFix]
            ),
        )
    )
    return [a for a in result or [] if isinstance(a, lsp.CodeAction)]


async def check_every_fix(client, text: str, label: str) -> int:
    """Apply each quick fix of each diagnostic: the code must go, and no error come."""
    uri, published = await opened(client, text, label)
    applied = 0
    for diagnostic in published.diagnostics:
        for action in await actions_for(client, uri, diagnostic):
            assert action.kind == lsp.CodeActionKind.QuickFix
            assert action.diagnostics and action.diagnostics[0].code == diagnostic.code
            assert action.edit is not None
            fixed = apply_text_edits(text, edits_of(action.edit, uri))
            _, after = await opened(client, fixed, f"{label}-fixed")
            codes = [str(d.code) for d in after.diagnostics]
            assert str(diagnostic.code) not in codes, (action.title, fixed)
            assert errors(after) == [], (action.title, fixed)
            applied += 1
    return applied


@pytest.mark.parametrize("path", FIXABLE, ids=lambda p: p.name)
async def test_every_quick_fix_of_the_error_examples_clears_its_diagnostic(client, path):
    assert await check_every_fix(client, path.read_text(), path.stem) >= 1


@pytest.mark.parametrize("label", sorted(EXTRA))
async def test_quick_fixes_for_option_spelling_roles_and_exports(client, label):
    assert await check_every_fix(client, EXTRA[label], label) >= 1


async def test_the_dimension_mismatch_offers_a_projection_morphism_and_a_new_dimension(client):
    path = next(p for p in ERROR_EXAMPLES if p.name.startswith("QVR201"))
    uri, published = await opened(client, path.read_text(), "qvr201")
    [diagnostic] = [d for d in published.diagnostics if d.code == "QVR201"]
    titles = [a.title for a in await actions_for(client, uri, diagnostic)]
    assert any(t.startswith("Change Combined to Real 128") for t in titles)
    assert any(t.startswith("Insert a projection morphism") for t in titles)


async def test_preferred_fix_is_marked_for_clients_that_support_it(client):
    path = next(p for p in ERROR_EXAMPLES if p.name.startswith("QVR101"))
    uri, published = await opened(client, path.read_text(), "preferred")
    [diagnostic] = [d for d in published.diagnostics if d.code == "QVR101"]
    [action] = await actions_for(client, uri, diagnostic)
    assert action.title == "Change to 'cell'"
    expected = True if client.flavour == "vscode" else None
    assert action.is_preferred is expected


async def test_only_other_kinds_gives_no_quick_fixes(client):
    path = next(p for p in ERROR_EXAMPLES if p.name.startswith("QVR101"))
    uri, published = await opened(client, path.read_text(), "only")
    [diagnostic] = [d for d in published.diagnostics if d.code == "QVR101"]
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=doc(uri),
            range=diagnostic.range,
            context=lsp.CodeActionContext(diagnostics=[], only=[lsp.CodeActionKind.Refactor]),
        )
    )
    assert not result
