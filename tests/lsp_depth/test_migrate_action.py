"""The "Migrate file" source action and the era shown on hover, over the protocol."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from qvr_core.migrate import migrate_text
from tests.lsp_depth.support import apply_text_edits, doc, edits_of, errors, opened

pytestmark = pytest.mark.asyncio(loop_scope="session")

OLD = """\
# a model for quivers 0.12
object A : FinSet 3  # states
let f = identity(A)  # kept

rule combine(X, Y) : A, A => A
export f
"""
OLDER = (
    "# older\nobject Term : 16\nobject H : Real 2\nmorphism f : Term -> H [role=embed]\nexport f\n"
)
CURRENT = "object A : FinSet 3\ndefine f = identity(A)\nexport f\n"
WHOLE = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))


async def actions(client, uri: str, only: list[str] | None) -> list[lsp.CodeAction]:
    context = lsp.CodeActionContext(diagnostics=[], only=only)
    result = await client.text_document_code_action_async(
        lsp.CodeActionParams(text_document=doc(uri), range=WHOLE, context=context)
    )
    return [a for a in result or [] if isinstance(a, lsp.CodeAction)]


async def test_the_server_announces_the_kind(client) -> None:
    provider = client.server_capabilities.code_action_provider
    assert "source.migrate" in provider.code_action_kinds


@pytest.mark.parametrize("only", [["source"], ["source.migrate"]])
@pytest.mark.parametrize("text", [OLD, OLDER], ids=["let-era", "older-surface"])
async def test_migrating_a_file_gives_what_qvr_migrate_gives(client, only, text) -> None:
    uri, _ = await opened(client, text, "migrate")
    # `only: ["source"]` also gets source.fixAll when the file has a preferred fix
    found = await actions(client, uri, only)
    [action] = [a for a in found if a.kind == "source.migrate"]
    assert action.edit is not None
    migrated = apply_text_edits(text, edits_of(action.edit, uri))
    assert migrated == migrate_text(text).text != text
    assert "# " in migrated.splitlines()[0]  # comments kept
    _, after = await opened(client, migrated, "migrated")
    assert errors(after) == []
    assert not any(d.code == "QVR010" for d in after.diagnostics)


async def test_no_migration_unless_asked_for_source_actions(client) -> None:
    uri, _ = await opened(client, OLD, "unasked")
    assert not any(a.kind == "source.migrate" for a in await actions(client, uri, None))
    assert await actions(client, uri, [lsp.CodeActionKind.QuickFix]) == []


async def test_nothing_to_migrate_in_current_syntax_or_a_file_that_does_not_parse(client):
    uri, _ = await opened(client, CURRENT, "current")
    assert await actions(client, uri, ["source"]) == []
    uri, _ = await opened(client, "object A : FinSet 3\nlet f = \n", "broken")
    assert await actions(client, uri, ["source"]) == []


async def hover(client, uri: str, line: int, character: int) -> str | None:
    result = await client.text_document_hover_async(
        lsp.HoverParams(text_document=doc(uri), position=lsp.Position(line, character))
    )
    if result is None:
        return None
    contents = result.contents
    return contents.value if isinstance(contents, lsp.MarkupContent) else str(contents)


@pytest.mark.parametrize(
    ("text", "era"),
    [
        (OLD, "written for quivers 0.11-0.14 (top-level let, `rule ... =>`)"),
        (CURRENT, "written for quivers 0.15+ (define)"),
        (OLDER, "written for quivers 0.1-0.10 (an older surface)"),
    ],
)
async def test_hover_on_the_first_declaration_names_the_era(client, text, era) -> None:
    uri, _ = await opened(client, text, "era")
    line = next(i for i, t in enumerate(text.splitlines()) if t.startswith("object"))
    on_keyword = await hover(client, uri, line, 2)
    on_name = await hover(client, uri, line, len("object "))
    assert on_keyword is not None and era in on_keyword
    assert on_name is not None and era in on_name and "object" in on_name


async def test_other_declarations_do_not_repeat_the_era(client) -> None:
    uri, _ = await opened(client, CURRENT, "era-once")
    value = await hover(client, uri, 1, len("define "))
    assert value is not None and "written for" not in value
