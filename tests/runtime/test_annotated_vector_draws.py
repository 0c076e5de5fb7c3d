"""`sample pi : K <- Dirichlet(..)` then `observe y : Resp <- Categorical(pi)`: the
annotation of a vector family with no `over=` names the axis of one draw (one point of
the K-simplex, the probs of every y), unless the arguments fix a draw of another size
(then K is a plate). This is quivers' reading (its guide, dsl-programs-and-lets.md, and
its elaborator's `_annotated_plate`); the checker types it and the runtime draws it so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from qvr_cli.main import main
from qvr_core.check import check
from qvr_core.runtime.model import compile_model

PROGRAM = """object K : FinSet 3
object Resp : FinSet 20

program mix : Resp -> Resp
    sample pi : K <- {prior}
    observe y : Resp <- Categorical({probs})
    return y

export mix
"""

#: One K-simplex point: a number, a list or spread entries of |K|, or the data's vector.
ONE_DRAW = ["Dirichlet(1.0)", "Dirichlet([1.0, 2.0, 3.0])", "Dirichlet(1.0, 2.0, 3.0)"]
ONE_DRAW += ["Dirichlet(alpha)", "Dirichlet(concentration=alpha)"]
ALPHA = torch.tensor([1.0, 2.0, 3.0])
Y = torch.arange(20) % 3


def _source(prior: str, probs: str = "pi") -> str:
    return PROGRAM.format(prior=prior, probs=probs)


@pytest.mark.parametrize("prior", ONE_DRAW)
@pytest.mark.parametrize("probs", ["pi", "probs=pi"])
def test_the_pair_checks_clean_with_pi_one_simplex_point(prior: str, probs: str) -> None:
    checked = check(_source(prior, probs))
    errors = [(d.code, d.message) for d in checked.diagnostics if d.severity.name == "ERROR"]
    assert errors == []
    pi = next(s for s in checked.models["mix"].sites if s.name == "pi")
    assert pi.type is not None
    assert pi.type.plates == ()
    assert pi.type.element.kind == "simplex" and pi.type.element.event == (3,)


def test_arguments_of_another_size_make_the_annotation_a_plate() -> None:
    """`pc : K <- Dirichlet(1.0, 2.0)`: a two-simplex point per entry of K, which is
    not the probs of a y over Resp."""
    checked = check(_source("Dirichlet(1.0, 2.0)"))
    pi = next(s for s in checked.models["mix"].sites if s.name == "pi")
    assert pi.type is not None
    assert [p.name for p in pi.type.plates] == ["K"] and pi.type.element.event == (2,)
    (plate,) = [d for d in checked.diagnostics if d.code == "QVR313"]
    assert "probs=pi is over K, but y is over Resp" in plate.message


@pytest.mark.parametrize("prior", ONE_DRAW)
def test_the_compiled_program_draws_one_point_and_scores_every_y(prior: str) -> None:
    checked = check(_source(prior))
    program = compile_model(checked, "mix")
    data = {"alpha": ALPHA} if "alpha" in prior else {}
    run = program.run(data, observations={"y": Y})
    assert tuple(run.values["pi"].shape) == (3,)
    assert torch.allclose(run.values["pi"].sum().float(), torch.tensor(1.0))
    expected = torch.distributions.Categorical(run.values["pi"]).log_prob(Y).sum()
    assert torch.allclose(run.log_probs["y"], expected.reshape(1))
    assert program.site_event_shape("pi") == (3,)


def test_qvr_run_fits_it_with_nuts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "mix.qvr"
    source.write_text(_source("Dirichlet(alpha)"))
    data = tmp_path / "data.json"
    data.write_text(json.dumps({"alpha": ALPHA.tolist(), "y": Y.tolist()}))
    capsys.readouterr()
    args = ["--data", str(data), "--method", "nuts", "--steps", "10", "--chains", "1"]
    code = main(["run", str(source), *args, "--seed", "1", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["posterior"]["sites"]["pi"]["shape"] == [3]
    rows = [r for r in summary["posterior"]["rows"] if r["site"] == "pi"]
    assert [r["index"] for r in rows] == [[0], [1], [2]]
