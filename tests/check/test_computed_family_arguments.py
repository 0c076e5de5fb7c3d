"""A family argument that is a call of builtin functions (`Bernoulli(sigmoid(eta))`, which
quivers' grammars parse from 0.14 on) is checked and run: its value is a `let` of its
own before the site (`y_probs`), so the runtime, the exports and the diagram read it as
they read every let, and the program scores exactly as the one with the let written out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from qvr_core.check import check
from qvr_core.check.model import Let, Site
from qvr_core.inference.mcmc import ProgramPotential, chain_layout, initial_values
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.prepare import prepare
from tests.conformance import oracle

CALLED = """\
object Row : FinSet 6

program logistic : Row -> Row
    sample a <- Normal(0.0, 1.0)
    sample b <- Normal(0.0, 1.0)
    sample s <- HalfNormal(1.0)
    let eta = a * x
    observe y : Row <- Bernoulli(sigmoid(eta))
    observe z : Row <- Normal(b, exp(min(s, 2.0)))
    return eta

export logistic
"""

WRITTEN_OUT = CALLED.replace(
    "    observe y : Row <- Bernoulli(sigmoid(eta))",
    "    let p = sigmoid(eta)\n    observe y : Row <- Bernoulli(p)",
).replace(
    "    observe z : Row <- Normal(b, exp(min(s, 2.0)))",
    "    let sd = exp(min(s, 2.0))\n    observe z : Row <- Normal(b, sd)",
)

DATA = {
    "x": [0.5, -1.0, 2.0, 0.3, -0.7, 1.1],
    "y": [1, 0, 1, 1, 0, 1],
    "z": [0.2, -0.4, 1.3, 0.8, -1.1, 0.5],
}


def test_the_call_is_a_let_before_its_site_and_nothing_is_left_unchecked() -> None:
    module = check(CALLED)
    assert [d.code for d in module.diagnostics] == []
    steps = module.models["logistic"].steps
    names = [s.name for s in steps if isinstance(s, Let | Site)]
    assert names[names.index("y_probs") + 1] == "y"
    assert names[names.index("z_scale") + 1] == "z"
    y = next(s for s in steps if isinstance(s, Site) and s.name == "y")
    assert [(a.param, a.name) for a in y.args] == [("probs", "y_probs")]
    let = next(s for s in steps if isinstance(s, Let) and s.name == "z_scale")
    assert let.uses == ("s",)
    assert oracle.accepted_by(CALLED), "quivers' grammar parses a call as a family argument"


def test_the_program_scores_exactly_as_the_one_with_its_lets_written_out(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps(DATA))
    potentials = []
    for text in (CALLED, WRITTEN_OUT):
        run = prepare(text, RunArguments(method="nuts"), data=str(data))
        layout = chain_layout(run.program, run.x, run.observations)
        potentials.append(ProgramPotential(run.program, run.x, run.observations, layout))
        torch.manual_seed(0)
        start = layout.pack(initial_values(run.program, run.x, dict(run.observations)))
    for shift in (0.0, 0.4, -1.3):
        z = start + shift
        (u1, g1), (u2, g2) = (p(z) for p in potentials)
        assert u1 == u2
        assert torch.equal(g1, g2)


def test_a_generated_name_never_takes_a_name_of_the_program() -> None:
    text = CALLED.replace("    let eta = a * x", "    let eta = a * x\n    let y_probs = eta")
    module = check(text.replace("return eta", "return y_probs"))
    assert [d.code for d in module.diagnostics] == []
    y = next(s for s in module.models["logistic"].steps if isinstance(s, Site) and s.name == "y")
    assert y.args[0].name == "y_probs_"


@pytest.mark.parametrize("argument", ["softplus(eta, eta)", "nosuch(eta)", "sigmoid(eta[Row])"])
def test_what_is_no_call_of_a_builtin_function_keeps_the_names_only_check(argument: str) -> None:
    text = CALLED.replace("Bernoulli(sigmoid(eta))", f"Bernoulli({argument})")
    codes = [d.code for d in check(text).diagnostics]
    assert "QVR011" in codes


def test_a_generated_name_never_takes_a_name_the_program_binds_later() -> None:
    text = CALLED.replace("    return eta", "    let y_probs = eta * 2.0\n    return y_probs")
    module = check(text)
    assert [d.code for d in module.diagnostics] == []
    y = next(s for s in module.models["logistic"].steps if isinstance(s, Site) and s.name == "y")
    assert y.args[0].name == "y_probs_"
