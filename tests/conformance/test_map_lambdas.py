"""`map(xs, x -> body)` in a let means what quivers 0.25.2 computes for it.

Read from quivers' compiler (the 0.25.2 wheel, `dsl/qiec_lowering.py`, `_lower_map`,
with `_collection_lambda` and `_indexed_collection_item`): `map` takes 2 arguments,
a non-scalar tensor xs and a lambda (written inline or let-bound; "argument 2 of 'map'
must be a lambda" otherwise), and lowers to one comprehension over xs's leading extent
whose entry i is the lambda's body with its parameter substituted by `xs[i]`; the
result's shape is `(n, *body_shape)`. qvr's leading axis is xs's first plate, so `x` is
a value over xs's other plates. The program below is written in the syntax of quivers
0.11 and later, with the lambda inline as the guide writes it
(`docs/guides/dsl-programs-and-lets.md`, `let ys = map(xs, x -> x - 1.0)`).

What is compared: the mapped values against the rule above computed by hand from the
latents; the log joint against the same model with each entry written out as arithmetic;
and what qvr refuses that quivers refuses too (a second argument that is not a lambda).
"""

from __future__ import annotations

import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.model import ModelProgram, compile_model
from tests.conformance import oracle

MAPPED = """object N : FinSet 4
object K : FinSet 3

program mapped : N -> N
    sample s <- Normal(0.0, 1.0)
    sample mu : N <- Normal(0.0, 1.0)
    sample b : K <- Normal(0.0, 1.0)
    let ys = map(mu, x -> x - 1.0 + s)
    let grid = factor i : N, k : K in mu[i] * b[k]
    let rows = map(grid, r -> r[1] + sum(r))
    let eta = ys + rows
    observe y : N <- Normal(eta, 0.5)
    return RETURNED

export mapped
"""

#: The same model with each mapped entry written out as arithmetic over the plates.
WRITTEN = MAPPED.replace(
    "    let ys = map(mu, x -> x - 1.0 + s)\n", "    let ys = mu - 1.0 + s\n"
).replace(
    "    let rows = map(grid, r -> r[1] + sum(r))\n",
    "    let rows = mu * b[1] + mu * sum(b)\n",
)

F64 = torch.float64
LATENTS = {
    "s": torch.tensor(0.3, dtype=F64),
    "mu": torch.tensor([0.1, -0.5, 0.9, 2.0], dtype=F64),
    "b": torch.tensor([1.0, -2.0, 0.5], dtype=F64),
}
Y = torch.tensor([0.5, 1.0, -1.5, 0.2], dtype=F64)


def _source(returned: str, text: str = MAPPED) -> str:
    return text.replace("RETURNED", returned)


def _model(source: str) -> ModelProgram:
    checked = check(source)
    assert checked.ok, checked.errors
    return compile_model(checked, "mapped")


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(_source("eta"))


def test_entry_i_is_the_body_at_entry_i_of_the_collection() -> None:
    run = _model(_source("ys")).run({}, {"y": Y}, LATENTS)
    mu, s = LATENTS["mu"], LATENTS["s"]
    want = torch.stack([mu[i] - 1.0 + s for i in range(4)])
    torch.testing.assert_close(run.output, want, rtol=0, atol=1e-12)


def test_the_parameter_is_a_row_over_the_other_plates() -> None:
    run = _model(_source("rows")).run({}, {"y": Y}, LATENTS)
    grid = LATENTS["mu"][:, None] * LATENTS["b"][None, :]
    want = torch.stack([grid[i][1] + grid[i].sum() for i in range(4)])
    assert run.output.shape == (4,)
    torch.testing.assert_close(run.output, want, rtol=0, atol=1e-12)


def test_the_log_joint_is_the_models_with_the_entries_written_out() -> None:
    values = {**LATENTS, "y": Y}
    got = _model(_source("eta")).log_joint({}, values)
    written = _model(_source("eta", WRITTEN)).log_joint({}, values)
    torch.testing.assert_close(got, written, rtol=0, atol=1e-12)
    mu, b, s = LATENTS["mu"], LATENTS["b"], LATENTS["s"]
    mean = mu - 1.0 + s + mu * b[1] + mu * b.sum()
    want = (
        D.Normal(0.0, 1.0).log_prob(s)
        + D.Normal(0.0, 1.0).log_prob(mu).sum()
        + D.Normal(0.0, 1.0).log_prob(b).sum()
        + D.Normal(mean, 0.5).log_prob(Y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want, rtol=0, atol=1e-12)


def test_a_second_argument_that_is_not_a_lambda_is_refused_as_quivers_refuses_it() -> None:
    source = _source("eta").replace("x -> x - 1.0 + s", "s")
    errors = check(source).errors
    assert [d.code for d in errors] == ["QVR104"], errors
    assert "lambda" in errors[0].message
    assert errors[0].span.start == source.index("map(mu, s)") + len("map(mu, ")
