"""Morphism programs with family steps and data names (quivers' gru_lm and bnn pages):
a run draws the shapes the checker states and scores them as the family says."""

from __future__ import annotations

import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.check.types import Seq
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.family_draw import FamilyDraw
from qvr_core.runtime.program import ProgramModule
from qvr_core.runtime.tensors import event_shape
from tests.check.test_mixed_steps import BNN, CELL, HEAD


def _program(text: str, name: str) -> ProgramModule:
    checked = check(text)
    assert checked.ok, [(d.code, d.message) for d in checked.diagnostics]
    torch.manual_seed(0)
    program = Compiler(checked).export(name)
    assert isinstance(program, ProgramModule)
    return program


def test_a_family_step_draws_one_number_per_coordinate_and_scores_them() -> None:
    program = _program(HEAD + CELL, "cell")
    x = program.example_input(4, 1)
    run = program.run(x)
    h_prev = x[:, 3:]  # Embedded (3) then Hidden (5), side by side
    z, h_cand = run.values["z"], run.values["h_cand"]
    assert tuple(h_cand.shape) == (4, *event_shape(program.info.values["h_cand"]))
    want = D.Normal(z * h_prev, 0.5).log_prob(h_cand).sum(-1)
    torch.testing.assert_close(run.log_probs["h_cand"], want)
    assert isinstance(program.steps["h_cand"], FamilyDraw)
    assert program.site_support("h_cand") == "real"


def test_the_cell_runs_inside_a_scan() -> None:
    text = (
        HEAD
        + CELL.replace("export cell\n", "")
        + (
            "define backbone = tok_embed >> scan(cell)\n"
            "program lm : Token -> Hidden\n    sample h <- backbone\n    return h\n\nexport lm\n"
        )
    )
    program = _program(text, "lm")
    assert isinstance(program.dom, Seq)
    x = program.example_input(3, 6)
    h = program.run(x).values["h"]
    assert tuple(h.shape) == (3, 5)  # the scan's last state
    assert torch.isfinite(h).all()


def test_a_positive_family_draws_positive_values() -> None:
    program = _program(
        HEAD + "program p(e, h) : Embedded * Hidden -> Hidden\n"
        "    sample z <- gate(e, h)\n"
        "    sample w <- LogNormal(z, 0.3)\n"
        "    return w\n\nexport p\n",
        "p",
    )
    w = program.run(program.example_input(8, 1)).values["w"]
    assert (w > 0).all()
    assert program.site_support("w") == "positive"


def test_a_data_name_a_morphism_reads_is_one_value_of_its_domain_per_example() -> None:
    program = _program(BNN, "bnn")
    data = program.example_data(5, 1)
    assert set(data) == {"x"} and tuple(data["x"].shape) == (5, 1)
    assert data["x"].is_floating_point()
    run = program.run(program.example_input(5, 1), data)
    assert tuple(run.values["y"].shape) == (5, 1)
    assert tuple(run.log_probs["y"].shape) == (5,)
    # the data changes the draw's parameters: the network reads it
    other = {"x": data["x"] + 10.0}
    leaf = program.morphisms["net"]
    assert not torch.allclose(leaf.params(data["x"]), leaf.params(other["x"]))
