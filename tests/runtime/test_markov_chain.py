"""`MarkovChain(transition, initial)` in the runtime: the forward algorithm a `marginalize`
sums a chain out with, against the sum over every path written out; a hidden Markov
model's log joint against the textbook recursion (one step at a time, in NumPy); the
chain observed scores its path; a latent chain without data is refused by NUTS, with the
checker's words."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.distributions import make_distribution
from qvr_core.runtime.markov import MarkovChain
from qvr_core.runtime.model import ModelProgram, compile_model
from qvr_core.runtime.model.enumerate import SummedModel
from tests.models import markov

F64 = torch.float64
TRANSITION = [[0.7, 0.2, 0.1], [0.3, 0.3, 0.4], [0.05, 0.15, 0.8]]
INITIAL = [0.5, 0.3, 0.2]


def _t(value: object) -> torch.Tensor:
    return torch.tensor(value, dtype=F64)


def _program(source: str, name: str) -> ModelProgram:
    checked = check(source)
    assert checked.ok, [(d.code, d.message) for d in checked.diagnostics]
    return compile_model(checked, name)


def _every_path(chain: MarkovChain, emissions: torch.Tensor) -> torch.Tensor:
    """log sum over all K**T paths of p(path) * exp(sum of its emissions), one path at a
    time: what the forward algorithm must equal."""
    k, steps = emissions.shape
    terms = []
    for path in itertools.product(range(k), repeat=steps):
        z = torch.tensor(path)
        chain_t = chain.expand((steps,))
        terms.append(chain_t.log_prob(z).sum() + emissions[z, torch.arange(steps)].sum())
    return torch.logsumexp(torch.stack(terms), 0)


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 6, 7])
def test_the_forward_algorithm_is_the_sum_over_every_path(steps: int) -> None:
    """Odd and even lengths (the pairwise reduction pads an odd level), and one step
    (no transition at all)."""
    torch.manual_seed(steps)
    emissions = torch.randn(3, steps, dtype=F64) * 2
    chain = MarkovChain(_t(TRANSITION), _t(INITIAL)).expand((steps,))
    got = chain.log_marginal(emissions)
    assert got.shape == ()
    assert float(got) == pytest.approx(float(_every_path(chain, emissions)), rel=1e-12)


def test_its_gradient_is_the_sum_over_every_path_s() -> None:
    torch.manual_seed(0)
    emissions = torch.randn(3, 5, dtype=F64)
    grads = []
    for forward in (True, False):
        transition = _t(TRANSITION).requires_grad_(True)
        e = emissions.clone().requires_grad_(True)
        chain = MarkovChain(transition, _t(INITIAL)).expand((5,))
        value = chain.log_marginal(e) if forward else _every_path(chain, e)
        grads.append(torch.autograd.grad(value, (transition, e)))
    for a, b in zip(*grads, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_leading_axes_are_separate_chains() -> None:
    torch.manual_seed(1)
    emissions = torch.randn(3, 2, 4, dtype=F64)  # (K, sequences, steps)
    chain = MarkovChain(_t(TRANSITION), _t(INITIAL)).expand((2, 4))
    got = chain.log_marginal(emissions)
    assert got.shape == (2,)
    for s in range(2):
        one = MarkovChain(_t(TRANSITION), _t(INITIAL)).expand((4,))
        assert float(got[s]) == pytest.approx(float(_every_path(one, emissions[:, s])), rel=1e-12)


def test_log_prob_puts_each_step_on_its_entry() -> None:
    chain = make_distribution("MarkovChain", {"transition": _t(TRANSITION)}).expand((4,))
    z = torch.tensor([0, 2, 2, 1])
    got = chain.log_prob(z)
    t = np.array(TRANSITION)
    want = [math.log(1 / 3), math.log(t[0, 2]), math.log(t[2, 2]), math.log(t[2, 1])]
    assert got.tolist() == pytest.approx(want, rel=1e-14)


def test_draws_follow_the_transition() -> None:
    """A chain that always moves to the next state (mod 3) from a certain start."""
    cycle = _t([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    chain = MarkovChain(cycle, _t([0.0, 1.0, 0.0])).expand((7,))
    assert chain.sample().tolist() == [1, 2, 0, 1, 2, 0, 1]
    assert chain.sample((5,)).shape == (5, 7)


def test_a_malformed_transition_is_refused_in_words() -> None:
    with pytest.raises(ValueError, match="K x K matrix"):
        MarkovChain(_t([0.5, 0.5]))
    with pytest.raises(ValueError, match="one per value"):
        MarkovChain(_t([[0.5, 0.5], [0.5, 0.5]]), _t([1.0, 0.0, 0.0]))


# ---------------------------------------------------------------- in a program


def _textbook(theta: np.ndarray, start: np.ndarray, mu: np.ndarray, y: np.ndarray) -> float:
    """The forward recursion one step at a time (Rabiner's), in log space."""

    def emit(v: float) -> np.ndarray:
        return -0.5 * (v - mu) ** 2 - 0.5 * math.log(2 * math.pi)

    alpha = np.log(start) + emit(y[0])
    for v in y[1:]:
        m = alpha[:, None] + np.log(theta)
        top = m.max(0)
        alpha = top + np.log(np.exp(m - top).sum(0)) + emit(v)
    top = alpha.max()
    return float(top + math.log(np.exp(alpha - top).sum()))


@pytest.mark.parametrize("initial", [False, True])
def test_a_hidden_markov_model_s_log_joint_is_the_forward_recursion(initial: bool) -> None:
    steps = 37
    program = _program(markov.hidden(steps, initial), "hidden")
    rng = np.random.default_rng(3)
    y = rng.normal(5.0, 3.0, steps)
    theta = np.array([[0.8, 0.2], [0.35, 0.65]])
    start = np.array([0.6, 0.4]) if initial else np.array([0.5, 0.5])
    mu = np.array([2.5, 9.0])
    values = {"theta": _t(theta), "mu": _t(mu), "y": _t(y)}
    if initial:
        values["start"] = _t(start)
    got = float(program.log_joint({}, values))
    prior = float(D.Normal(_t([3.0, 10.0]), 1.0).log_prob(_t(mu)).sum())  # Dirichlet(1): 0
    assert got == pytest.approx(_textbook(theta, start, mu, y) + prior, rel=1e-12)


def test_a_long_chain_costs_no_recursion() -> None:
    """1,000 steps: the pairwise reduction is ten levels, not a thousand nested scopes."""
    program = _program(markov.hidden(1000), "hidden")
    rng = np.random.default_rng(4)
    theta = np.array([[0.9, 0.1], [0.2, 0.8]])
    mu = np.array([3.0, 10.0])
    y = rng.normal(6.0, 4.0, 1000)
    values = {"theta": _t(theta), "mu": _t(mu), "y": _t(y)}
    got = float(program.log_joint({}, values))
    prior = float(D.Normal(_t([3.0, 10.0]), 1.0).log_prob(_t(mu)).sum())
    want = _textbook(theta, np.array([0.5, 0.5]), mu, y) + prior
    assert got == pytest.approx(want, rel=1e-11)


def test_the_observed_chain_scores_its_path() -> None:
    program = _program(markov.observed(5), "observed")
    theta = np.array([[0.8, 0.2], [0.35, 0.65]])
    z = [0, 0, 1, 1, 0]
    got = float(program.log_joint({}, {"theta": _t(theta), "z": _t(z)}))
    want = math.log(0.5) + sum(math.log(theta[a, b]) for a, b in itertools.pairwise(z))
    assert got == pytest.approx(want, rel=1e-13)


def test_a_path_is_drawn_from_its_exact_posterior() -> None:
    """Forward filtering, backward sampling: each of the 3**4 paths is drawn as often as
    its posterior probability says (the sum over every path, normalised), within five
    standard errors of 20,000 draws."""
    torch.manual_seed(5)
    steps, n = 4, 20_000
    emissions = torch.randn(3, steps, dtype=F64)
    chain = MarkovChain(_t(TRANSITION), _t(INITIAL))
    paths = chain.expand((n, steps)).draw_path(emissions[:, None, :].expand(3, n, steps))
    assert paths.shape == (n, steps)
    one = chain.expand((steps,))
    total = _every_path(one, emissions)
    for path in itertools.product(range(3), repeat=steps):
        z = torch.tensor(path)
        p = float((one.log_prob(z).sum() + emissions[z, torch.arange(steps)].sum() - total).exp())
        seen = float((paths == z).all(-1).double().mean())
        assert abs(seen - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12, (path, seen, p)


def test_a_latent_chain_is_summed_out_for_nuts_and_drawn_back() -> None:
    """`sample z : Time <- MarkovChain(theta)` without data: the log joint sums it out as a
    marginalize does, and the posterior draws its path (here the emissions leave no
    doubt: each y sits on one state's mean)."""
    text = markov.hidden(6).replace(
        "    marginalize z : State <- MarkovChain(theta) [over=Time]\n        observe",
        "    sample z : Time <- MarkovChain(theta)\n    observe",
    )
    checked = check(text)
    assert checked.ok and not [d for d in checked.diagnostics if d.code == "QVR414"]
    program = compile_model(checked, "hidden")
    summed = SummedModel(program, observed=("y",))
    y = [3.0, 3.0, 10.0, 10.0, 10.0, 3.0]
    values = {"theta": _t([[0.8, 0.2], [0.3, 0.7]]), "mu": _t([3.0, 10.0]), "y": _t(y)}
    marginal = _program(markov.hidden(6), "hidden").log_joint({}, values)
    assert float(summed.log_joint({}, values)) == pytest.approx(float(marginal), rel=1e-12)
    drawn = summed.posterior({}, values)["z"]
    assert drawn.tolist() == [0, 0, 1, 1, 1, 0]
