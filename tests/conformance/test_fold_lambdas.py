"""`fold(xs, init, acc -> x -> body)` in a let means what quivers 0.25.2 computes for it.

Read from quivers' compiler (the 0.25.2 wheel, `dsl/qiec_lowering.py`,
`_lower_collection_value`'s `fold` case, with `_collection_lambda` and
`_indexed_collection_item`): `fold` takes 3 arguments ("fold takes 3 arguments"
otherwise), a non-scalar tensor xs of statically known leading extent n, an initial value
and a lambda curried with the accumulator first and the entry second ("fold's lambda is
curried as `acc -> item -> body`" otherwise), inline or bound by a let ("argument 3 of
'fold' must be a lambda" otherwise). Its value is the body substituted n times: the
accumulator starts as init, and step i puts the accumulator so far for `acc` and `xs[i]`
for the entry. qvr's leading axis is xs's first plate. The program is written in the
syntax of quivers 0.11 and later, the lambda curried as quivers' reference writes it
(`docs/reference/qvr/collection-expressions.md`, `fold(products, 0.0, total -> value ->
total + value)`), once inline and once bound by a let.

What is compared: the folded values against the recurrence computed by hand from fixed
latents in float64; the log joint against the same model with the fold written out step
by step as arithmetic; and what qvr refuses that quivers refuses too.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.model import ModelProgram, compile_model
from tests.conformance import oracle

#: An AR(1)-like recurrence: each series' state carried along Time, its last value the
#: mean of the next observation; the total reads its accumulator twice per step.
FOLDED = """object Time : FinSet 4
object Series : FinSet 3

program folded : Series -> Series
    sample phi <- Normal(0.0, 0.5)
    sample eps : Time * Series <- Normal(0.0, 1.0)
    sample s0 : Series <- Normal(0.0, 1.0)
    let step = acc -> e -> phi * acc + e
    let level = fold(eps, s0, step)
    let total = fold(s0, 0.5, a -> x -> a * a - a + x)
    let eta = level + total
    observe y : Series <- Normal(eta, 0.5)
    return RETURNED

export folded
"""

#: The same model with each step written out as arithmetic over the plates.
WRITTEN = (
    FOLDED.replace("    let step = acc -> e -> phi * acc + e\n", "")
    .replace(
        "    let level = fold(eps, s0, step)\n",
        "    let l1 = phi * s0 + eps[0]\n"
        "    let l2 = phi * l1 + eps[1]\n"
        "    let l3 = phi * l2 + eps[2]\n"
        "    let level = phi * l3 + eps[3]\n",
    )
    .replace(
        "    let total = fold(s0, 0.5, a -> x -> a * a - a + x)\n",
        "    let t1 = 0.5 * 0.5 - 0.5 + s0[0]\n"
        "    let t2 = t1 * t1 - t1 + s0[1]\n"
        "    let total = t2 * t2 - t2 + s0[2]\n",
    )
)

F64 = torch.float64
LATENTS = {
    "phi": torch.tensor(0.6, dtype=F64),
    "eps": torch.tensor(
        [[0.1, -0.5, 0.9], [2.0, 0.3, -1.2], [-0.7, 0.4, 0.25], [1.1, -0.9, 0.05]], dtype=F64
    ),
    "s0": torch.tensor([0.3, -1.0, 0.8], dtype=F64),
}
Y = torch.tensor([0.5, 1.0, -1.5], dtype=F64)


def _source(returned: str, text: str = FOLDED) -> str:
    return text.replace("RETURNED", returned)


def _model(source: str) -> ModelProgram:
    checked = check(source)
    assert checked.ok, checked.errors
    return compile_model(checked, "folded")


def _level() -> torch.Tensor:
    acc = LATENTS["s0"]
    for k in range(4):
        acc = LATENTS["phi"] * acc + LATENTS["eps"][k]
    return acc


def _total() -> torch.Tensor:
    acc = torch.tensor(0.5, dtype=F64)
    for k in range(3):
        acc = acc * acc - acc + LATENTS["s0"][k]
    return acc


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(_source("eta"))


def test_the_value_is_the_recurrence_along_the_first_plate() -> None:
    run = _model(_source("level")).run({}, {"y": Y}, LATENTS)
    assert run.output.shape == (3,)
    torch.testing.assert_close(run.output, _level(), rtol=0, atol=1e-12)


def test_an_accumulator_read_twice_is_the_left_fold() -> None:
    run = _model(_source("total")).run({}, {"y": Y}, LATENTS)
    assert run.output.shape == ()
    torch.testing.assert_close(run.output, _total(), rtol=0, atol=1e-12)


def test_the_log_joint_is_the_models_with_the_steps_written_out() -> None:
    values = {**LATENTS, "y": Y}
    got = _model(_source("eta")).log_joint({}, values)
    written = _model(_source("eta", WRITTEN)).log_joint({}, values)
    torch.testing.assert_close(got, written, rtol=0, atol=1e-12)
    want = (
        D.Normal(torch.tensor(0.0, dtype=F64), 0.5).log_prob(LATENTS["phi"])
        + D.Normal(0.0, 1.0).log_prob(LATENTS["eps"]).sum()
        + D.Normal(0.0, 1.0).log_prob(LATENTS["s0"]).sum()
        + D.Normal(_level() + _total(), 0.5).log_prob(Y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("written", "instead", "words"),
    [
        # quivers: "fold's lambda is curried as `acc -> item -> body`"
        ("fold(eps, s0, step)", "fold(eps, s0, e -> phi * e)", "curried"),
        # quivers: "argument 3 of 'fold' must be a lambda"
        ("fold(eps, s0, step)", "fold(eps, s0, phi)", "lambda"),
        # quivers: "fold takes 3 arguments, got 2"
        ("fold(eps, s0, step)", "fold(eps, step)", "3 values"),
        # quivers: "fold expects a non-scalar tensor"
        ("fold(eps, s0, step)", "fold(phi, s0, step)", "no plate"),
    ],
)
def test_what_quivers_refuses_is_refused_where_it_is_written(
    written: str, instead: str, words: str
) -> None:
    source = _source("eta").replace(written, instead)
    # the parse is the grammars' (quivers refuses these when it lowers them, as qvr does)
    with contextlib.suppress(oracle.OracleUnavailable):
        assert oracle.modern(oracle.accepted_by(source)), "quivers' grammars parse it"
    errors = check(source).errors
    assert len(errors) == 1, errors
    assert words in errors[0].message
    assert source.index(instead) <= errors[0].span.start < source.index(instead) + len(instead)
