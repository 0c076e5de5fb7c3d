"""Completion over the protocol: each context offers what may be written there."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp

from tests.lsp.support import diagnostics_for, fresh_uri, open_document

pytestmark = pytest.mark.asyncio(loop_scope="module")

DECLARATIONS = """\
object Token : FinSet 256
object Embedded : Real 64
object Hidden : Real 128

#! The token table.
morphism tok_embed : Token -> Embedded [role=embed]
morphism cell : Embedded * Hidden -> Hidden [role=kernel, scale=0.1] ~ Normal
morphism lm_head : Hidden -> Token [role=kernel] ~ Categorical
morphism head : Hidden -> Hidden [role=kernel, replicate=2] ~ Normal

let backbone = tok_embed >> scan(cell)

program other : Token -> Token
    sample elsewhere <- backbone
    observe y : Token <- lm_head(elsewhere)
    return y

export other

program lm (x) : Token -> Token
    sample h <- backbone
    let g = sigmoid(h)
"""


async def labels(client, tail: str) -> set[str]:
    """Completion labels at the end of DECLARATIONS + `tail`."""
    text = DECLARATIONS + tail
    uri = fresh_uri("completion")
    open_document(client, uri, text)
    await diagnostics_for(client, uri, 1)
    lines = text.split("\n")
    result = await client.text_document_completion_async(
        lsp.CompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri),
            position=lsp.Position(len(lines) - 1, len(lines[-1])),
        )
    )
    assert isinstance(result, lsp.CompletionList)
    return {item.label for item in result.items}


OBJECTS = {"Token", "Embedded", "Hidden"}
MORPHISMS = {"tok_embed", "cell", "lm_head"}


async def test_type_positions_offer_objects(client):
    assert await labels(client, "morphism f : Token -> ") == OBJECTS
    assert await labels(client, "program p : ") == OBJECTS


async def test_object_body_offers_constructors_and_objects(client):
    found = await labels(client, "object Pair : ")
    assert {"FinSet", "Real", "Positive", "Unit", "Simplex"} <= found
    assert found >= OBJECTS and "Pair" not in found


async def test_options_roles_and_families(client):
    keys = await labels(client, "morphism f : Token -> Hidden [role=embed, ")
    assert {"scale", "replicate", "param_source", "hidden_dim", "rank"} <= keys
    assert "role" not in keys
    assert await labels(client, "morphism f : Token -> Hidden [role=") == {
        "discretize",
        "embed",
        "kernel",
        "latent",
    }
    families = await labels(client, "morphism f : Hidden -> Hidden [role=kernel] ~ ")
    assert {"Normal", "Categorical", "Deterministic"} <= families and not families & OBJECTS


async def test_let_expressions_offer_combinators_and_morphisms(client):
    found = await labels(client, "let deep = tok_embed >> ")
    assert {"fan", "scan", "stack", "repeat", "identity"} <= found
    assert MORPHISMS | {"backbone", "head"} <= found
    assert not found & OBJECTS and "deep" not in found


async def test_after_an_arrow_in_a_program_offers_morphisms_lets_programs(client):
    found = await labels(client, "    sample z <- ")
    assert MORPHISMS | {"backbone", "other"} <= found
    assert "lm" not in found and "head" not in found  # itself; a bare replicate group
    assert not found & OBJECTS


async def test_call_arguments_offer_this_programs_bound_names_only(client):
    found = await labels(client, "    observe t : Token <- lm_head(")
    assert {"x", "h", "g"} <= found
    assert "elsewhere" not in found and "y" not in found
    assert not found & MORPHISMS


async def test_arithmetic_offers_bound_names_and_functions(client):
    found = await labels(client, "    let k = h * ")
    assert {"x", "h", "g", "sigmoid", "tanh", "min", "max"} <= found
    assert "elsewhere" not in found


async def test_statement_starts_offer_keywords(client):
    steps = {"sample", "observe", "marginalize", "score", "let", "return"}
    assert await labels(client, "    ") == steps
    tops = {"object", "morphism", "let", "define", "program", "export"}
    assert await labels(client, "\nmor") == tops


async def test_export_offers_programs_and_lets(client):
    assert await labels(client, "\nexport ") == {"backbone", "other", "lm"}


async def test_nothing_inside_comments(client):
    assert await labels(client, "\n# sample h <- ") == set()


async def test_builtin_names_offered_are_exactly_the_registrys(client):
    """After `~`: the families the registry lets a morphism take; in types, lets and
    arithmetic: every constructor, combinator and builtin function (`map` and `fold`
    among them), each once."""
    from qvr_core.builtins import COMBINATORS, FUNCTIONS, KERNEL_FAMILIES, OBJECT_CONSTRUCTORS
    from qvr_core.builtins.functions import LIFTED

    families = await labels(client, "morphism f : Hidden -> Hidden [role=kernel] ~ ")
    assert families == set(KERNEL_FAMILIES)
    assert (await labels(client, "object Pair : ")) - OBJECTS == set(OBJECT_CONSTRUCTORS)
    combinators = await labels(client, "let deep = tok_embed >> ")
    declared = MORPHISMS | {"backbone", "head", "head_0", "head_1", "other", "lm"}
    assert combinators - declared == set(COMBINATORS)
    # a chart parser only as a let's whole expression: it composes with nothing
    assert (await labels(client, "let deep = ")) - declared == {*COMBINATORS, "parser"}
    arith = await labels(client, "    let k = ")
    assert set(FUNCTIONS) | set(LIFTED) <= arith
    assert arith - set(FUNCTIONS) - set(LIFTED) <= {"x", "h", "g"}
