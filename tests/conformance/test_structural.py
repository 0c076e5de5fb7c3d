"""Signatures, encoders, decoders and losses are read as quivers 0.25.2 reads them.

Read from quivers (the 0.25.2 wheel): `dsl/compiler/structural.py` (`_compile_signature`,
`_compile_encoder`, `_compile_decoder`, `_compile_loss`, `_decode_loss_attachment`,
`_build_encoder_from_factory`, `_resolve_dim`) and `structural/signature.py`
(`Binder.domain`). Each refusal below is one that compiler raises, written where the
compiler points; the programs are our own, written like the gallery's term autoencoder
and quivers' structural fixtures, and parsed by quivers' grammars.
"""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.ide.hover import hover_at
from tests.conformance import oracle

SOURCE = """# Arithmetic expressions with let-bound variables.
signature Arith
    sorts
        Expr : object
        Num : data [dim=8, vocab=[0, 1, 2]]
        Ty : object [dim=8]
    constructors
        Lit : Num -> Expr
        Add : Expr, Expr -> Expr
        Int : -> Ty
    binders
        Let : binds (x : Expr : t : Ty) in (body : Expr) -> Expr

encoder enc : Arith
    dim Expr = 16
    op Add(a, b) |-> tanh(a + b)
    var_init Expr from Ty as t |-> t

decoder dec : Arith [depth=5]
    dim Expr = 16
    body |-> recursive

loss rebuild [weight=0.5, on=decoder(dec)]
    -dec.log_prob(expr, enc(expr))

object Resp : FinSet 2
program prog : Resp -> Resp
    sample x <- Bernoulli(0.5)
    return x
export prog
"""


def _found(source: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in check(source).diagnostics if d.code != "QVR103"]


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(SOURCE)


def test_the_declarations_are_checked_whole() -> None:
    assert _found(SOURCE) == []


def test_hover_gives_the_sorts_operators_and_dimensions() -> None:
    module = check(SOURCE)
    shown = hover_at(module, SOURCE.index("signature Arith") + len("signature "))
    assert shown is not None
    # a binder's arguments: its annotations' sorts, then its scoped arguments'
    assert "Let : Ty, Expr -> Expr" in shown.plain and "Num (data, dim 8)" in shown.plain
    enc = hover_at(module, SOURCE.index("encoder enc") + len("encoder "))
    assert enc is not None and "Expr 16, Num 8, Ty 8" in enc.plain
    dec = hover_at(module, SOURCE.index("decoder dec") + len("decoder "))
    assert dec is not None and "depth 5" in dec.plain


@pytest.mark.parametrize(
    ("before", "after", "code", "says"),
    [
        # _compile_signature
        (
            "        Ty : object [dim=8]\n",
            "        Ty : object [dim=8]\n        Ty : object\n",
            "QVR102",
            "duplicate sort Ty",
        ),
        ("Lit : Num -> Expr", "Data : Num -> Expr", "QVR102", "framework's own"),
        ("Add : Expr, Expr -> Expr", "Add : Expr, Bool -> Expr", "QVR101", "undeclared sort Bool"),
        ("Int : -> Ty", "Int : -> Type", "QVR101", "unknown result sort Type"),
        (
            "Ty : object [dim=8]",
            'Ty : object [dim=8, vocab=["a"]]',
            "QVR304",
            "only valid on data sorts",
        ),
        ("vocab=[0, 1, 2]", "vocab=[0, 1, 1]", "QVR102", "has 1 twice"),
        ("(x : Expr : t : Ty)", "(x : Expr : t : Type)", "QVR101", "undeclared sort Type"),
        # _compile_encoder, _resolve_dim
        ("encoder enc : Arith", "encoder enc : Arth", "QVR101", "undefined signature 'Arth'"),
        ("    dim Expr = 16\n    op", "    op", "QVR304", "sort Expr has no dim"),
        ("op Add(a, b)", "op Mul(a, b)", "QVR101", "not an operator of signature Arith"),
        ("op Add(a, b) |-> tanh(a + b)", "op Add(a) |-> tanh(a)", "QVR406", "takes 2 arguments"),
        (
            "var_init Expr from Ty as t |-> t",
            "var_init Expr from Ty |-> 0.0",
            "QVR304",
            "needs `as NAME`",
        ),
        ("tanh(a + b)", "tanh(a + c)", "QVR101", "undefined name 'c'"),
        (
            "encoder enc : Arith",
            "encoder enc : Arith [factory=rnn]",
            "QVR304",
            "unknown factory rnn",
        ),
        ("encoder enc : Arith", "encoder enc : Arith [width=3]", "QVR303", "no option 'width'"),
        # _compile_decoder
        ("[depth=5]", "[depth=0]", "QVR304", "depth is a whole number > 0"),
        ("[depth=5]", "[depth=5, beam=2]", "QVR303", "no option 'beam'"),
        # _compile_loss, _decode_loss_attachment
        ("weight=0.5", "weight=heavy", "QVR304", "weight is a number"),
        ("on=decoder(dec)", "on=layer(dec)", "QVR304", "on= is one of"),
        ("on=decoder(dec)", "on=rule(dec)", "QVR304", "takes rule and deduction"),
        ("on=decoder(dec)", "on=decoder(dek)", "QVR802", "never evaluates it"),
        ("[weight=0.5,", "[weight=0.5, scale=2,", "QVR303", "no option 'scale'"),
    ],
)
def test_what_quivers_refuses_is_reported_where_it_is(
    before: str, after: str, code: str, says: str
) -> None:
    assert before in SOURCE
    found = _found(SOURCE.replace(before, after, 1))
    assert any(c == code and says in m for c, m in found), found


def test_a_factory_takes_its_own_options() -> None:
    source = SOURCE.replace(
        "encoder enc : Arith", "encoder enc : Arith [factory=gnn_encoder, iterations=2]"
    )
    assert _found(source) == []
    wrong = SOURCE.replace(
        "encoder enc : Arith", "encoder enc : Arith [factory=rnn_encoder, iterations=2]"
    )
    assert any(c == "QVR303" and "does not accept iterations" in m for c, m in _found(wrong))


def test_a_loss_reads_its_environment_and_the_file() -> None:
    """`expr` is the training environment's; `dec` and `enc` are the file's: uses of
    them, so renaming the decoder renames it in the loss too."""
    module = check(SOURCE)
    assert _found(SOURCE) == []
    body = SOURCE.index("-dec.log_prob")
    for name, at in (("dec", body + 1), ("enc", SOURCE.index("enc(expr)"))):
        symbol = module.symbols.lookup(name)
        assert symbol is not None
        starts = [r.span.start for r in module.symbols.references_to(symbol)]
        assert at in starts, (name, starts)


def test_a_recurrent_rule_binds_its_state() -> None:
    source = SOURCE.replace(
        "op Add(a, b) |-> tanh(a + b)", "op Add(a, b) recurrent s |-> tanh(a + s)"
    )
    oracle.require_head(source)
    assert _found(source) == []
