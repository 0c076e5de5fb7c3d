"""An observed let of the data runs as Stan's `transformed data`: its value is computed
from the data names once, before the run, observed like a data file's observation, and
drawn again under the let's name by a forward (predictive) run."""

from __future__ import annotations

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.model_data import split_data, synthetic
from qvr_core.runtime.model import ModelProgram, compile_model
from tests.models import regressions

EARNINGS = regressions.earnings(5)

EARN = torch.tensor([50000, 60000, 30000, 50000, 51000])  # whole numbers, as JSON gives them
HEIGHT = torch.tensor([74.0, 66.0, 64.0, 63.0, 63.0], dtype=torch.float64)
BETA = torch.tensor([8.0, 0.03], dtype=torch.float64)
SIGMA = torch.tensor(0.9, dtype=torch.float64)


def _model(source: str = EARNINGS, name: str = "earnings") -> ModelProgram:
    checked = check(source)
    assert checked.ok, checked.errors
    return compile_model(checked, name)


def _by_hand() -> torch.Tensor:
    log_earn = torch.log(EARN.double())
    return (
        D.Normal(0.0, 10.0).log_prob(BETA).sum()
        + D.HalfNormal(5.0).log_prob(SIGMA)
        + D.Normal(BETA[0] + BETA[1] * HEIGHT, SIGMA).log_prob(log_earn).sum()
    )


def test_the_data_are_the_let_s_data_names_and_its_value_is_an_observation() -> None:
    m = _model()
    assert m.data_names == ("earn", "height")
    assert m.observed_names == ("log_earn",)
    assert m.computed_names == ("log_earn",)
    x, observed = split_data(m, {"earn": EARN, "height": HEIGHT}, "earnings.json")
    assert set(x) == {"earn", "height"}
    assert list(observed) == ["log_earn"]
    torch.testing.assert_close(observed["log_earn"], torch.log(EARN.double()))


def test_the_log_joint_is_the_normal_density_of_log_earn_by_hand() -> None:
    m = _model()
    x, observed = split_data(m, {"earn": EARN, "height": HEIGHT}, "earnings.json")
    got = m.log_joint(x, {"beta": BETA, "sigma": SIGMA, **observed})
    torch.testing.assert_close(got[0], _by_hand())
    # without the observation given, the pass observes the let's own value
    alone = m.log_joint(x, {"beta": BETA, "sigma": SIGMA})
    torch.testing.assert_close(alone, got, rtol=0, atol=0)


def test_the_pointwise_likelihood_is_per_row_of_log_earn() -> None:
    m = _model()
    x, observed = split_data(m, {"earn": EARN, "height": HEIGHT}, "earnings.json")
    terms = m.log_likelihood(x, observed, {"beta": BETA, "sigma": SIGMA})
    want = D.Normal(BETA[0] + BETA[1] * HEIGHT, SIGMA).log_prob(torch.log(EARN.double()))
    torch.testing.assert_close(terms["log_earn"], want)


def test_a_forward_run_draws_a_replicate_under_the_let_s_name() -> None:
    m = _model()
    x, _ = split_data(m, {"earn": EARN, "height": HEIGHT}, "earnings.json")
    with torch.no_grad():
        run = m.run(x, {}, {"beta": BETA, "sigma": SIGMA})
    drawn = run.values["log_earn"]
    assert drawn.shape == (5,)
    assert not torch.equal(drawn, torch.log(EARN.double()))  # a draw, not the data
    assert "log_earn" in run.log_probs


def test_the_data_file_must_not_hold_the_computed_observation() -> None:
    m = _model()
    given = {"earn": EARN, "height": HEIGHT, "log_earn": torch.zeros(5)}
    with pytest.raises(InferenceError) as e:
        split_data(m, given, "earnings.json")
    message = str(e.value)
    assert "unexpected 'log_earn'" in message
    assert "it computes 'log_earn' from the data names (an observed let)" in message
    with pytest.raises(InferenceError, match=r"missing 'earn' \(line 7\)"):
        split_data(m, {"height": HEIGHT}, "earnings.json")


def test_a_computed_observation_that_is_not_finite_is_refused() -> None:
    m = _model()
    earn = torch.tensor([50000, 0, 30000, 50000, 51000])
    with pytest.raises(InferenceError) as e:
        split_data(m, {"earn": earn, "height": HEIGHT}, "earnings.json")
    message = str(e.value)
    assert "'log_earn', computed from the data names by its let (line 7), holds -inf" in message


def test_a_computed_observation_of_the_wrong_shape_is_refused() -> None:
    m = _model()
    with pytest.raises(InferenceError) as e:
        split_data(m, {"earn": torch.ones(7), "height": HEIGHT}, "earnings.json")
    message = str(e.value)
    assert "'log_earn', computed from the data names by its let (line 7), has shape (7,)" in message
    assert "observe log_earn : Row (line 9) needs (5,)" in message


DUMMIES = """\
object Row : FinSet 6

program p : Row -> Row
    sample mu <- Normal(0.0, 1.0)
    let is_two = age == 2
    let centred = x - x.mean()
    let both = centred * is_two
    observe is_two : Row <- Normal(mu, 1.0)
    observe both : Row <- Normal(mu, 1.0)
    return mu

export p
"""


def test_dummies_and_centring_are_computed_from_the_data() -> None:
    m = _model(DUMMIES, "p")
    assert m.data_names == ("age", "x") and m.computed_names == ("is_two", "both")
    age = torch.tensor([1, 2, 3, 2, 4, 2])
    x = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 9.0], dtype=torch.float64)
    _, observed = split_data(m, {"age": age, "x": x}, "data.json")
    dummy = torch.tensor([0.0, 1.0, 0.0, 1.0, 0.0, 1.0], dtype=torch.float64)
    torch.testing.assert_close(observed["is_two"], dummy)
    torch.testing.assert_close(observed["both"], (x - x.mean()) * dummy)


def test_an_observation_computed_from_numbers_only_is_not_synthesised() -> None:
    source = (
        "object Row : FinSet 3\n\nprogram p : Row -> Row\n"
        "    sample mu <- Normal(0.0, 1.0)\n"
        "    let y = 2.0 + 0.0 * mu\n"
        "    let z = 2.5\n"
        "    observe z <- Normal(mu, 1.0)\n"
        "    return mu\n\nexport p\n"
    )
    checked = check(source)
    assert [d.code for d in checked.diagnostics if d.code != "QVR103"] == []
    m = compile_model(checked, "p")
    assert synthetic(m, 0) == {}  # nothing to draw: the run computes it
    _, observed = split_data(m, {}, "synthetic data")
    torch.testing.assert_close(observed["z"], torch.tensor(2.5, dtype=torch.float64))


TEMPLATE = """\
object Row : FinSet 5

program sub(G : FinSet, s : Real) : G -> G
    sample m <- Normal(0.0, 1.0)
    let ly = log(earn)
    observe ly : G <- Normal(m, s)
    return m

program top : Row -> Row
    sample v <- sub(Row, 1.0)
    sample w <- Normal(0.0, 1.0)
    return v

export top
"""


def test_a_template_s_observed_let_is_computed_under_its_call() -> None:
    m = _model(TEMPLATE, "top")
    assert m.computed_names == ("v$ly",) and m.data_names == ("earn",)
    earn = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    x, observed = split_data(m, {"earn": earn}, "data.json")
    logs = torch.log(earn.double())
    torch.testing.assert_close(observed["v$ly"], logs)
    v, w = torch.tensor(0.3, dtype=torch.float64), torch.tensor(0.1, dtype=torch.float64)
    got = m.log_joint(x, {"v$m": v, "w": w, **observed})
    want = (
        D.Normal(0.0, 1.0).log_prob(v)
        + D.Normal(0.0, 1.0).log_prob(w)
        + D.Normal(v, 1.0).log_prob(logs).sum()
    )
    torch.testing.assert_close(got[0], want)
