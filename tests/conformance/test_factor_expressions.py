"""A `factor` expression in a let means what quivers 0.25.2 computes for it.

Read from quivers' compiler (the 0.25.2 wheel, `dsl/qiec_lowering.py`, `_lower_factor`
and `_factor_extent`): `factor v_1 : I_1, ..., v_n : I_n in body` lowers to one
comprehension per binder, the first outermost, so its value has shape
`(|I_1|, ..., |I_n|, *body_shape)` and its entry at `(i_1, ..., i_n)` is the body with
`v_k := i_k`, each binder a whole number (`Local(binder.var, INT)`) seen in the body
only; `factor c : C in {0 -> e_0, ...}` has one binder, its labels cover `0..|C|-1`
exactly ("factor cases label ..., not every index below ..."), every case is of one
type ("factor cases differ in type"), and entry k is case k's value. The guide
(`docs/guides/dsl-programs-and-lets.md`, "Factor expressions: assembling indexed
tensors") and the gallery's `tree_categorical.qvr` write both forms; the program below
is that example's model in the syntax of quivers 0.11 and later.

What is compared: the table's entries against the rule above, computed by hand from
the latents' values; the log joint against the same model with each entry written out
as arithmetic; and what qvr refuses that quivers refuses too (a gap in the labels).
"""

from __future__ import annotations

import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.model import ModelProgram, compile_model
from tests.conformance import oracle

TREE = """object Verb : FinSet 3
object Class : FinSet 4
object Resp : FinSet 5

program tree_categorical : Resp -> Resp
    sample p_root <- Beta(1.0, 1.0)
    sample p_left <- Beta(1.0, 1.0)
    sample p_right <- Beta(1.0, 1.0)
    let leaf_log = factor cls : Class in {
        0 -> log(1.0 - p_root) + log(1.0 - p_left),
        1 -> log(1.0 - p_root) + log(p_left),
        2 -> log(p_root) + log(1.0 - p_right),
        3 -> log(p_root) + log(p_right),
    }
    sample delta : Verb <- Normal(0.0, 1.0)
    sample mu : Class <- Normal(0.0, 1.0)
    let cell_score = factor v : Verb, cls : Class in delta[v] + mu[cls] + leaf_log[cls]
    let cell = cell_score[1, 2]
    observe y : Resp <- Normal(cell, 0.5)
    return RETURNED

export tree_categorical
"""

#: The same model with the table's one entry it observes written out.
WRITTEN = TREE.replace(
    "    let cell = cell_score[1, 2]\n",
    "    let cell = delta[1] + mu[2] + log(p_root) + log(1.0 - p_right)\n",
)

F64 = torch.float64
LATENTS = {
    "p_root": torch.tensor(0.3, dtype=F64),
    "p_left": torch.tensor(0.6, dtype=F64),
    "p_right": torch.tensor(0.8, dtype=F64),
    "delta": torch.tensor([0.4, -1.1, 0.25], dtype=F64),
    "mu": torch.tensor([0.2, -0.3, 0.9, 1.4], dtype=F64),
}
Y = torch.tensor([0.5, 1.0, 1.5, 0.2, -0.1], dtype=F64)


def _source(returned: str, text: str = TREE) -> str:
    return text.replace("RETURNED", returned)


def _model(source: str) -> ModelProgram:
    checked = check(source)
    assert checked.ok, checked.errors
    return compile_model(checked, "tree_categorical")


def _leaves() -> torch.Tensor:
    r, left, right = LATENTS["p_root"], LATENTS["p_left"], LATENTS["p_right"]
    return torch.stack(
        [
            torch.log(1 - r) + torch.log(1 - left),
            torch.log(1 - r) + torch.log(left),
            torch.log(r) + torch.log(1 - right),
            torch.log(r) + torch.log(right),
        ]
    )


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(_source("delta"))


def test_the_case_form_puts_case_k_at_entry_k() -> None:
    run = _model(_source("leaf_log")).run({}, {"y": Y}, LATENTS)
    torch.testing.assert_close(run.output, _leaves())


def test_the_table_has_the_first_binders_axis_outermost_and_the_body_at_each_entry() -> None:
    run = _model(_source("cell_score")).run({}, {"y": Y}, LATENTS)
    delta, mu, leaves = LATENTS["delta"], LATENTS["mu"], _leaves()
    want = torch.stack(
        [torch.stack([delta[v] + mu[c] + leaves[c] for c in range(4)]) for v in range(3)]
    )
    assert run.output.shape == (3, 4)
    torch.testing.assert_close(run.output, want)


def test_the_log_joint_is_the_models_with_the_entry_written_out() -> None:
    values = {**LATENTS, "y": Y}
    got = _model(_source("delta")).log_joint({}, values)
    written = _model(_source("delta", WRITTEN)).log_joint({}, values)
    torch.testing.assert_close(got, written, rtol=0, atol=1e-12)
    mean = LATENTS["delta"][1] + LATENTS["mu"][2] + _leaves()[2]
    want = (
        3 * D.Beta(1.0, 1.0).log_prob(torch.tensor(0.5, dtype=F64))
        + D.Normal(0.0, 1.0).log_prob(LATENTS["delta"]).sum()
        + D.Normal(0.0, 1.0).log_prob(LATENTS["mu"]).sum()
        + D.Normal(mean, 0.5).log_prob(Y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want)


def test_cases_that_miss_a_label_are_refused_as_quivers_refuses_them() -> None:
    source = _source("delta").replace("        3 -> log(p_root) + log(p_right),\n", "")
    errors = check(source).errors
    assert [d.code for d in errors] == ["QVR207"]
    assert "no case for 3" in errors[0].message
