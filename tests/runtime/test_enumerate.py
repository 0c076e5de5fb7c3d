"""Discrete latent sites summed out of a model program's log joint and drawn back
(`qvr_core.runtime.model.enumerate`): against closed forms, brute-force enumeration and
a hand-written forward algorithm."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model import ModelProgram
from qvr_core.runtime.model.enumerate import SummedModel
from qvr_core.runtime.model.marginal import MAX_RUNS
from qvr_core.runtime.model.program import compile_model


def model(source: str, name: str) -> ModelProgram:
    checked = check(source)
    errors = [d.message for d in checked.diagnostics if d.severity.name == "ERROR"]
    assert not errors, errors
    return compile_model(checked, name)


def summed(source: str, name: str) -> tuple[ModelProgram, SummedModel]:
    m = model(source, name)
    return m, SummedModel(m, m.observed_names)


def draws(s: SummedModel, values: dict[str, torch.Tensor], site: str, n: int) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.stack([s.posterior({}, values)[site] for _ in range(n)])


def binomial_bound(p: float, n: int) -> float:
    """Five standard errors of a frequency of probability p over n draws."""
    return 5 * math.sqrt(p * (1 - p) / n) + 1e-3


# ------------------------------------------------------------------ a global mixture

SWITCH = """
object Obs : FinSet 5

program switch : Obs -> Obs
    sample mu <- Normal(0.0, 3.0)
    sample x <- Bernoulli(0.3)
    let m = mu * x
    observe y : Obs <- Normal(m, 1.0)
    return mu

export switch
"""


def switch_weights(mu: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """log p(x = k) + log p(y | mu, x = k), k = 0, 1."""
    return torch.stack(
        [
            math.log(0.7) + D.Normal(0.0, 1.0).log_prob(y).sum(),
            math.log(0.3) + D.Normal(mu, 1.0).log_prob(y).sum(),
        ]
    )


def test_a_global_discrete_latent_is_summed_out_of_the_log_joint() -> None:
    m, s = summed(SWITCH, "switch")
    assert s.site_names == ("mu", "y") and s.summed == ("x",)
    assert m.site_names == ("mu", "x", "y")  # the program itself still has it
    y, mu = torch.tensor([1.0, 2.0, 1.5, 0.5, 2.5]), torch.tensor(1.2)
    want = D.Normal(0.0, 3.0).log_prob(mu) + torch.logsumexp(switch_weights(mu, y), 0)
    torch.testing.assert_close(s.log_joint({}, {"mu": mu, "y": y})[0].float(), want)


def test_the_sum_has_the_closed_form_s_gradient() -> None:
    _, s = summed(SWITCH, "switch")
    y = torch.tensor([1.0, 2.0, 1.5, 0.5, 2.5])
    mu = torch.tensor(0.4, requires_grad=True)
    (got,) = torch.autograd.grad(s.log_joint({}, {"mu": mu, "y": y}).sum(), mu)
    mu2 = torch.tensor(0.4, requires_grad=True)
    want_lp = D.Normal(0.0, 3.0).log_prob(mu2) + torch.logsumexp(switch_weights(mu2, y), 0)
    (want,) = torch.autograd.grad(want_lp, mu2)
    torch.testing.assert_close(got, want)


def test_a_global_discrete_latent_is_drawn_from_its_exact_posterior() -> None:
    _, s = summed(SWITCH, "switch")
    y, mu = torch.tensor([0.6, 1.1, 0.2, 0.9, 0.4]), torch.tensor(0.7)
    p1 = float(torch.softmax(switch_weights(mu, y), 0)[1])
    assert 0.2 < p1 < 0.8  # a posterior that is neither value for sure
    # p1 is 0.54: at 500 draws the five-standard-error bound is 0.112 and a correct
    # sampler fails it with probability 4e-7 (exact binomial), as at 2,000 draws
    n = 500
    got = float(draws(s, {"mu": mu, "y": y}, "x", n).float().mean())
    assert abs(got - p1) < binomial_bound(p1, n)


def test_a_value_given_for_a_summable_site_is_scored_not_summed() -> None:
    m, s = summed(SWITCH, "switch")
    y, mu = torch.tensor([1.0, 2.0, 1.5, 0.5, 2.5]), torch.tensor(1.2)
    for x in (0.0, 1.0):
        values = {"mu": mu, "x": torch.tensor(x), "y": y}
        torch.testing.assert_close(s.log_joint({}, values), m.log_joint({}, values))


def test_a_run_still_draws_the_discrete_site() -> None:
    _, s = summed(SWITCH, "switch")
    values = s.run({}).values
    assert set(values) == {"mu", "x", "y"} and float(values["x"]) in (0.0, 1.0)


# ------------------------------------------------------------------ one z per row

ROWS = """
object Component : FinSet 2
object Point : FinSet 6

program gmm : Point -> Point
    sample weights <- Dirichlet(1.0) [over=Component]
    sample mu : Component <- Normal(0.0, 5.0)
    sample z : Point <- Categorical(weights)
    observe y : Point <- Normal(mu[z], 1.0)
    return weights

export gmm
"""


def test_a_plated_discrete_latent_is_summed_row_by_row() -> None:
    m, s = summed(ROWS, "gmm")
    torch.manual_seed(1)
    v = m.run({}).values
    w, mu, y = v["weights"], v["mu"], v["y"]
    per_row = torch.log(w)[None] + D.Normal(mu[None], 1.0).log_prob(y[:, None])
    want = (
        D.Dirichlet(torch.ones(2)).log_prob(w)
        + D.Normal(0.0, 5.0).log_prob(mu).sum()
        + torch.logsumexp(per_row, 1).sum()
    )
    got = s.log_joint({}, {k: v[k] for k in s.site_names})[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


def test_each_row_is_drawn_from_its_own_posterior() -> None:
    _, s = summed(ROWS, "gmm")
    w, mu = torch.tensor([0.4, 0.6]), torch.tensor([-1.0, 1.0])
    y = torch.tensor([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5])
    per_row = torch.log(w)[None] + D.Normal(mu[None], 1.0).log_prob(y[:, None])
    want = torch.softmax(per_row, 1)[:, 1]
    n = 1000
    z = draws(s, {"weights": w, "mu": mu, "y": y}, "z", n)
    assert z.shape == (n, 6) and set(z.unique().tolist()) <= {0, 1}
    got = z.float().mean(0)
    for g, p in zip(got.tolist(), want.tolist(), strict=True):
        assert abs(g - p) < binomial_bound(p, n)


ROW_CHAIN = """
object State : FinSet 2
object Point : FinSet 3

program p : Point -> Point
    sample w <- Dirichlet(1.0) [over=State]
    sample trans : State <- Dirichlet(1.0) [over=State, iid_over=State]
    sample mu : State <- Normal(0.0, 3.0)
    sample z : Point <- Categorical(w)
    sample v : Point <- Categorical(trans[z])
    observe y : Point <- Normal(mu[v], 1.0)
    return w

export p
"""


def test_plated_sites_that_read_each_other_are_drawn_jointly_per_row() -> None:
    """v reads z row by row: each row's (z, v) comes from that row's joint posterior,
    v's weights taken, per row, from the sum kept for the z that row drew."""
    _, s = summed(ROW_CHAIN, "p")
    w, trans = torch.tensor([0.3, 0.7]), torch.tensor([[0.9, 0.1], [0.2, 0.8]])
    mu, y = torch.tensor([-1.0, 1.5]), torch.tensor([-1.2, 0.3, 2.0])
    values = {"w": w, "trans": trans, "mu": mu, "y": y}
    joint = torch.log(w)[:, None] + torch.log(trans) + D.Normal(mu, 1.0).log_prob(y[:, None, None])
    prior = (
        D.Dirichlet(torch.ones(2)).log_prob(w)
        + D.Dirichlet(torch.ones(2)).log_prob(trans).sum()
        + D.Normal(0.0, 3.0).log_prob(mu).sum()
    )
    want = prior + torch.logsumexp(joint.reshape(3, -1), 1).sum()
    torch.testing.assert_close(s.log_joint({}, values)[0].float(), want)
    exact = torch.softmax(joint.reshape(3, -1), 1).reshape(3, 2, 2)
    n = 800
    torch.manual_seed(0)
    counts = torch.zeros(3, 2, 2)
    for _ in range(n):
        d = s.posterior({}, values)
        for row in range(3):
            counts[row, int(d["z"][row]), int(d["v"][row])] += 1
    for row, z, v in itertools.product(range(3), range(2), range(2)):
        p = float(exact[row, z, v])
        assert abs(float(counts[row, z, v]) / n - p) < binomial_bound(p, n), (row, z, v)


# ------------------------------------------------------------------ an HMM's chain of states


def hmm_source(length: int) -> str:
    lines = [
        "object State : FinSet 3",
        "object Symbol : FinSet 4",
        "",
        "program hmm : State -> State",
        "    sample start <- Dirichlet(1.0) [over=State]",
        "    sample trans : State <- Dirichlet(1.0) [over=State, iid_over=State]",
        "    sample emit : State <- Dirichlet(1.0) [over=Symbol, iid_over=State]",
        "    sample s0 <- Categorical(start)",
        "    observe o0 <- Categorical(emit[s0])",
    ]
    for t in range(1, length):
        lines.append(f"    sample s{t} <- Categorical(trans[s{t - 1}])")
        lines.append(f"    observe o{t} <- Categorical(emit[s{t}])")
    return "\n".join([*lines, "    return start", "", "export hmm", ""])


def hmm_values(length: int) -> tuple[dict[str, torch.Tensor], list[int]]:
    start = torch.tensor([0.5, 0.3, 0.2])
    trans = torch.tensor([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.3, 0.6]])
    emit = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.05, 0.05, 0.2, 0.7]])
    obs = [0, 0, 1, 3, 3, 2, 1, 0][:length]
    values = {"start": start, "trans": trans, "emit": emit}
    values |= {f"o{t}": torch.tensor(float(o)) for t, o in enumerate(obs)}
    return values, obs


def hmm_prior(v: dict[str, torch.Tensor]) -> torch.Tensor:
    return (
        D.Dirichlet(torch.ones(3)).log_prob(v["start"])
        + D.Dirichlet(torch.ones(3)).log_prob(v["trans"]).sum()
        + D.Dirichlet(torch.ones(4)).log_prob(v["emit"]).sum()
    )


def forward_algorithm(v: dict[str, torch.Tensor], obs: list[int]) -> torch.Tensor:
    """log p(o_0..o_T-1 | start, trans, emit), by the forward recursion."""
    log_t, log_e = torch.log(v["trans"]), torch.log(v["emit"])
    alpha = torch.log(v["start"]) + log_e[:, obs[0]]
    for o in obs[1:]:
        alpha = torch.logsumexp(alpha[:, None] + log_t, 0) + log_e[:, o]
    return torch.logsumexp(alpha, 0)


def path_log_probs(v: dict[str, torch.Tensor], obs: list[int]) -> dict[tuple[int, ...], float]:
    """log p(path, o) of every path of states, by brute force."""
    out = {}
    for path in itertools.product(range(3), repeat=len(obs)):
        lp = math.log(v["start"][path[0]]) + math.log(v["emit"][path[0], obs[0]])
        for t in range(1, len(obs)):
            lp += math.log(v["trans"][path[t - 1], path[t]]) + math.log(v["emit"][path[t], obs[t]])
        out[path] = lp
    return out


@pytest.mark.parametrize("length", [1, 2, 4, 8])
def test_a_chain_of_states_sums_to_the_forward_algorithm(length: int) -> None:
    _, s = summed(hmm_source(length), "hmm")
    assert s.summed == tuple(f"s{t}" for t in range(length))
    v, obs = hmm_values(length)
    want = hmm_prior(v) + forward_algorithm(v, obs)
    torch.testing.assert_close(s.log_joint({}, v)[0].float(), want, rtol=1e-5, atol=1e-4)
    if length <= 4:  # and to the brute-force sum over every path
        brute = torch.logsumexp(torch.tensor(list(path_log_probs(v, obs).values())), 0)
        torch.testing.assert_close(s.log_joint({}, v)[0].float(), hmm_prior(v) + brute.float())


def test_a_chain_of_states_costs_what_the_forward_algorithm_costs() -> None:
    """Each state's steps run once per value of it and of the state before (K * K), not
    once per path (K ** length): the chain is nested scopes whose sums are reused."""
    length = 8
    _, s = summed(hmm_source(length), "hmm")
    v, _ = hmm_values(length)
    import qvr_core.runtime.model.program as program

    calls = 0
    real = program.distribution

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    program.distribution = counted  # type: ignore[assignment]
    try:
        s.log_joint({}, v)
    finally:
        program.distribution = real  # type: ignore[assignment]
    # s0: 1 sum of 3 values (3 observes); s_t, t >= 1: 3 sums (one per s_{t-1}) of 3 values,
    # each an observe; plus every site's own distribution once per sum
    assert calls < 3 * 3 * 2 * length + 4 * length  # far from 3 ** 8 = 6561 paths


def test_a_chain_of_states_is_drawn_from_its_joint_posterior() -> None:
    length = 4
    _, s = summed(hmm_source(length), "hmm")
    v, obs = hmm_values(length)
    brute = path_log_probs(v, obs)
    z = torch.logsumexp(torch.tensor(list(brute.values()), dtype=torch.float64), 0)
    exact = {p: math.exp(lp - float(z)) for p, lp in brute.items()}
    # 16 checks, the least likely at p = 0.0095: at 500 draws a correct sampler fails
    # one of them with probability 3e-5 (exact binomial; 2e-5 at 1,000 draws)
    n = 500
    torch.manual_seed(0)
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(n):
        d = s.posterior({}, v)
        path = tuple(int(d[f"s{t}"]) for t in range(length))
        counts[path] = counts.get(path, 0) + 1
    for path, p in sorted(exact.items(), key=lambda kv: -kv[1])[:4]:  # the likeliest paths
        assert abs(counts.get(path, 0) / n - p) < binomial_bound(p, n), path
    for t in range(length):  # and each state's marginal
        for k in range(3):
            p = sum(q for path, q in exact.items() if path[t] == k)
            got = sum(c for path, c in counts.items() if path[t] == k) / n
            assert abs(got - p) < binomial_bound(p, n), (t, k)


# ------------------------------------------------------------------ bounds and refusals


def coins(n: int) -> str:
    lines = ["object One : FinSet 1", "", "program p : One -> One"]
    lines.append("    sample mu <- Normal(0.0, 1.0)")
    lines += [f"    sample x{i} <- Bernoulli(0.5)" for i in range(n)]
    lines.append("    let s0 = x0 * 1.0")
    lines += [f"    let s{i} = s{i - 1} + x{i}" for i in range(1, n)]
    lines += [f"    let m = s{n - 1} + mu", "    observe y <- Normal(m, 1.0)", "    return mu"]
    return "\n".join([*lines, "", "export p", ""])


def test_coins_read_together_are_summed_jointly_up_to_the_bound() -> None:
    _, s = summed(coins(3), "p")
    mu, y = torch.tensor(0.2), torch.tensor(2.1)
    heads = torch.tensor([sum(c) for c in itertools.product((0, 1), repeat=3)], dtype=torch.float)
    want = D.Normal(0.0, 1.0).log_prob(mu) + torch.logsumexp(
        math.log(1 / 8) + D.Normal(heads + mu, 1.0).log_prob(y), 0
    )
    torch.testing.assert_close(s.log_joint({}, {"mu": mu, "y": y})[0].float(), want)


def test_a_sum_past_the_bound_is_refused_with_its_site_and_size() -> None:
    n = int(math.log2(MAX_RUNS)) + 1  # 2 ** n runs of the first coin's steps
    _, s = summed(coins(n), "p")
    with pytest.raises(QvrRuntimeError) as info:
        s.log_joint({}, {"mu": torch.tensor(0.0), "y": torch.tensor(1.0)})
    message = str(info.value)
    assert message.startswith("line 5, sample x0: summing out this discrete site runs")
    assert f"{2**n:,} times" in message and f"limit of {MAX_RUNS:,}" in message
    assert "\n" not in message
