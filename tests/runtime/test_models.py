"""Model programs compile to the log joint their steps say, checked against densities
written out independently with torch.distributions (and the forward algorithm)."""

from __future__ import annotations

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.model import compile_model
from tests.eight_schools import SIGMA, SOURCE, Y

EIGHT = SOURCE


def model(source: str, name: str):  # type: ignore[no-untyped-def]
    checked = check(source)
    assert checked.ok, checked.errors
    return compile_model(checked, name)


def test_eight_schools_log_joint_is_the_sum_of_its_densities() -> None:
    m = model(EIGHT, "eight_schools")
    assert m.data_names == ("sigma",)
    assert m.site_names == ("mu", "tau", "theta_raw", "y")
    values = {"mu": torch.tensor(1.5), "tau": torch.tensor(2.0), "theta_raw": torch.randn(8)}
    got = m.log_joint({"sigma": SIGMA}, {**values, "y": Y})
    theta = values["mu"] + values["tau"] * values["theta_raw"]
    want = (
        D.Normal(0.0, 5.0).log_prob(values["mu"])
        + D.HalfCauchy(5.0).log_prob(values["tau"])
        + D.Normal(0.0, 1.0).log_prob(values["theta_raw"]).sum()
        + D.Normal(theta, SIGMA).log_prob(Y).sum()
    )
    assert got.shape == (1,)
    torch.testing.assert_close(got[0].float(), want)  # float64, checked at float32


def test_plates_shape_sites_and_supports_come_from_the_families() -> None:
    m = model(EIGHT, "eight_schools")
    run = m.run({"sigma": SIGMA})
    assert run.values["theta_raw"].shape == (8,) and run.values["mu"].shape == ()
    assert run.values["y"].shape == (8,)
    assert m.site_support("tau") == "positive" and m.site_support("mu") == "real"
    assert m.batch_shape({"sigma": SIGMA}) == ()


def test_missing_and_misshapen_data_name_the_variable() -> None:
    m = model(EIGHT, "eight_schools")
    with pytest.raises(QvrRuntimeError, match="needs data 'sigma'"):
        m.run({})
    with pytest.raises(QvrRuntimeError, match=r"scale \(7,\)"):
        m.run({"sigma": torch.ones(7)})
    with pytest.raises(QvrRuntimeError, match=r"'y' \(line 9\) has shape \(7,\)"):
        m.run({"sigma": SIGMA}, {"y": torch.zeros(7)})
    with pytest.raises(QvrRuntimeError, match="no value for the observed site 'y'"):
        latents = {"mu": torch.tensor(0.0), "tau": torch.tensor(1.0), "theta_raw": torch.zeros(8)}
        m.log_joint({"sigma": SIGMA}, latents)


def test_data_outside_the_support_is_refused_by_name() -> None:
    src = """
object Day : FinSet 4

program counts : Day -> Day
    sample rate <- Gamma(2.0, 1.0)
    observe k : Day <- Poisson(rate)
    return rate

export counts
"""
    m = model(src, "counts")
    with pytest.raises(QvrRuntimeError, match=r"'k' .* holds -1, outside the support"):
        m.run({}, {"k": torch.tensor([1.0, 2.0, -1.0, 0.0])})


GROUPS = """
object Group : FinSet 3
object Row : FinSet 6

program hier : Row -> Row
    sample alpha : Group <- Normal(0.0, 1.0)
    sample beta <- Normal(0.0, 1.0)
    let eta = alpha[group] + beta * x
    let p = sigmoid(eta)
    observe y : Row <- Bernoulli(probs=p)
    score shrink = -0.5 * sum(alpha) * sum(alpha)
    return alpha

export hier
"""


def test_gathers_let_arithmetic_keyword_arguments_and_score() -> None:
    m = model(GROUPS, "hier")
    assert set(m.data_names) == {"group", "x"}
    group = torch.tensor([0, 0, 1, 1, 2, 2])
    x = torch.linspace(-1, 1, 6)
    y = torch.tensor([0.0, 1, 1, 0, 1, 1])
    alpha, beta = torch.tensor([0.3, -0.2, 1.0]), torch.tensor(0.7)
    got = m.log_joint({"group": group, "x": x}, {"alpha": alpha, "beta": beta, "y": y})
    eta = alpha[group] + beta * x
    want = (
        D.Normal(0.0, 1.0).log_prob(alpha).sum()
        + D.Normal(0.0, 1.0).log_prob(beta)
        + D.Bernoulli(probs=torch.sigmoid(eta)).log_prob(y).sum()
        - 0.5 * alpha.sum() ** 2
    )
    torch.testing.assert_close(got[0].float(), want)  # float64, checked at float32


def test_an_index_out_of_range_names_the_index() -> None:
    m = model(GROUPS, "hier")
    bad = torch.tensor([0, 0, 1, 1, 2, 3])
    with pytest.raises(QvrRuntimeError, match=r"index 'group' holds 3, outside 0\.\.2 for 'alpha'"):
        m.run({"group": bad, "x": torch.zeros(6)})


MIXTURE = """
object Component : FinSet 3
object Point : FinSet 40

program gmm : Point -> Point
    sample weights <- Dirichlet(1.0) [over=Component]
    sample mu : Component <- Normal(0.0, 5.0)
    sample sigma : Component <- HalfNormal(2.0)
    marginalize z : Component <- Categorical(weights) [over=Point]
        observe y : Point <- Normal(mu[z], sigma[z])
    return weights

export gmm
"""


def test_a_marginalized_mixture_is_the_enumerated_sum() -> None:
    torch.manual_seed(3)
    m = model(MIXTURE, "gmm")
    v = m.run({}).values
    assert v["weights"].shape == (3,) and v["y"].shape == (40,)
    got = m.log_joint({}, v)
    w, mu, sigma, y = v["weights"], v["mu"], v["sigma"], v["y"]
    mixture = sum(w[k] * torch.exp(D.Normal(mu[k], sigma[k]).log_prob(y)) for k in range(3))
    want = (
        D.Dirichlet(torch.ones(3)).log_prob(w)
        + D.Normal(0.0, 5.0).log_prob(mu).sum()
        + D.HalfNormal(2.0).log_prob(sigma).sum()
        + torch.log(mixture).sum()
    )
    torch.testing.assert_close(got[0], want, rtol=1e-5, atol=1e-4)
    assert "z" not in m.site_names  # summed out, not a site


def test_a_global_marginalize_has_one_class_for_all_rows() -> None:
    src = MIXTURE.replace("[over=Point]", "")
    m = model(src, "gmm")
    v = m.run({}).values
    w, mu, sigma, y = v["weights"], v["mu"], v["sigma"], v["y"]
    per_class = torch.stack([D.Normal(mu[k], sigma[k]).log_prob(y).sum() for k in range(3)])
    want_ll = torch.logsumexp(torch.log(w) + per_class, 0)
    prior = (
        D.Dirichlet(torch.ones(3)).log_prob(w)
        + D.Normal(0.0, 5.0).log_prob(mu).sum()
        + D.HalfNormal(2.0).log_prob(sigma).sum()
    )
    torch.testing.assert_close(m.log_joint({}, v)[0], prior + want_ll, rtol=1e-5, atol=1e-3)


def test_grouped_marginalize_sums_rows_of_a_group_before_the_classes() -> None:
    src = """
object Class : FinSet 2
object Item : FinSet 3
object Resp : FinSet 7

program grouped : Resp -> Resp
    sample probs <- Dirichlet(1.0) [over=Class]
    sample mu : Class <- Normal(0.0, 3.0)
    marginalize c : Class <- Categorical(probs) [over=Item]
        observe r : Resp <- Normal(mu[c], 1.0) [via=item]
    return probs

export grouped
"""
    m = model(src, "grouped")
    item = torch.tensor([0, 0, 1, 1, 1, 2, 2])
    v = m.run({"item": item}).values
    probs, mu, r = v["probs"], v["mu"], v["r"]
    ll = D.Normal(mu[None, :], 1.0).log_prob(r[:, None])  # (7, 2)
    per_group = torch.zeros(3, 2, dtype=ll.dtype).index_add(0, item, ll)
    want = (
        D.Dirichlet(torch.ones(2)).log_prob(probs)
        + D.Normal(0.0, 3.0).log_prob(mu).sum()
        + torch.logsumexp(torch.log(probs) + per_group, -1).sum()
    )
    torch.testing.assert_close(m.log_joint({"item": item}, v)[0], want, rtol=1e-5, atol=1e-4)


HMM = """
object State : FinSet 2
object Symbol : FinSet 3
object Seq : FinSet 5

program hmm : Seq -> Seq
    sample start <- Dirichlet(1.0) [over=State]
    sample trans : State <- Dirichlet(1.0) [over=State, iid_over=State]
    sample emit : State <- Dirichlet(1.0) [over=Symbol, iid_over=State]
    marginalize s0 : State <- Categorical(start) [over=Seq]
        observe o0 : Seq <- Categorical(emit[s0])
        marginalize s1 : State <- Categorical(trans[s0]) [over=Seq]
            observe o1 : Seq <- Categorical(emit[s1])
            marginalize s2 : State <- Categorical(trans[s1]) [over=Seq]
                observe o2 : Seq <- Categorical(emit[s2])
    return start

export hmm
"""


def test_nested_marginalize_scopes_are_the_forward_algorithm() -> None:
    torch.manual_seed(1)
    m = model(HMM, "hmm")
    v = m.run({}).values
    assert v["trans"].shape == (2, 2) and v["emit"].shape == (2, 3)
    want = forward_algorithm(v, 3)
    torch.testing.assert_close(m.log_joint({}, v)[0], want, rtol=1e-5, atol=1e-4)


def hmm_source(depth: int, via_let: bool = False) -> str:
    """An HMM of `depth` nested scopes; `via_let` reads each transition row through a
    let bound inside the enclosing scope."""
    lines = [
        "object State : FinSet 2",
        "object Symbol : FinSet 3",
        "object Seq : FinSet 5",
        "",
        "program hmm : Seq -> Seq",
        "    sample start <- Dirichlet(1.0) [over=State]",
        "    sample trans : State <- Dirichlet(1.0) [over=State, iid_over=State]",
        "    sample emit : State <- Dirichlet(1.0) [over=Symbol, iid_over=State]",
        "    marginalize s0 : State <- Categorical(start) [over=Seq]",
        "        observe o0 : Seq <- Categorical(emit[s0])",
    ]
    for t in range(1, depth):
        pad = "    " * (t + 1)
        row = f"trans[s{t - 1}]"
        if via_let:
            lines.append(f"{pad}let row{t} = {row}")
            row = f"row{t}"
        lines.append(f"{pad}marginalize s{t} : State <- Categorical({row}) [over=Seq]")
        lines.append(f"{pad}    observe o{t} : Seq <- Categorical(emit[s{t}])")
    return "\n".join([*lines, "    return start", "", "export hmm", ""])


def forward_algorithm(v: dict, depth: int) -> torch.Tensor:
    s, t, e = v["start"], v["trans"], v["emit"]
    obs = torch.stack([v[f"o{i}"] for i in range(depth)], 1).long()
    alpha = torch.log(s) + torch.log(e[:, obs[:, 0]]).T
    for step in range(1, depth):
        alpha = torch.logsumexp(alpha[:, :, None] + torch.log(t)[None], 1)
        alpha = alpha + torch.log(e[:, obs[:, step]]).T
    prior = (
        D.Dirichlet(torch.ones(2)).log_prob(s)
        + D.Dirichlet(torch.ones(2)).log_prob(t).sum()
        + D.Dirichlet(torch.ones(3)).log_prob(e).sum()
    )
    return prior + torch.logsumexp(alpha, -1).sum()


@pytest.mark.parametrize("via_let", [False, True])
def test_a_deep_chain_of_scopes_is_summed_in_linear_time(monkeypatch, via_let: bool) -> None:
    from qvr_core.runtime.model import marginal

    depth = 7
    torch.manual_seed(3)
    m = model(hmm_source(depth, via_let), "hmm")
    v = m.run({}).values
    calls = []
    real = marginal.combine
    monkeypatch.setattr(marginal, "combine", lambda d, p, t: calls.append(1) or real(d, p, t))
    got = m.log_joint({}, v)[0]
    torch.testing.assert_close(got, forward_algorithm(v, depth), rtol=1e-5, atol=1e-4)
    # each scope once per value of the state before it (read directly or through a let
    # bound in the scope around it): 1 + 2 * (depth - 1), not 2 ** depth - 1
    assert len(calls) == 2 * depth - 1


def test_a_sample_inside_a_marginalize_scope_is_scored_under_each_value() -> None:
    src = """
object K : FinSet 3

program p : K -> K
    marginalize z : K <- Categorical(probs)
        sample w <- Normal(mu[z], 1.0)
    return w

export p
"""
    m = model(src, "p")
    assert m.site_names == ("w",)
    assert m.data_names == ("probs", "mu")
    probs, mu, w = torch.tensor([0.2, 0.3, 0.5]), torch.tensor([-1.0, 0.0, 2.0]), torch.tensor(0.7)
    got = m.log_joint({"probs": probs, "mu": mu}, {"w": w})[0]
    want = torch.logsumexp(probs.log() + D.Normal(mu, 1.0).log_prob(w), 0)
    torch.testing.assert_close(got.float(), want)  # float64, checked at float32


def test_a_construct_the_checker_does_not_type_is_refused_with_its_reason() -> None:
    src = """
object K : FinSet 3

program p : K -> K
    sample a <- Normal(0.0, 1.0)
    let b = frobnicate(a)
    return b

export p
"""
    checked = check(src)
    with pytest.raises(QvrError, match=r"program p .*its function frobnicate.*QVR011"):
        compile_model(checked, "p")


TEMPLATES = """
object Subject : FinSet 4
object Verb : FinSet 3
object Resp : FinSet 5

program random_intercepts(G : FinSet, scale : Real) : G -> G
    sample sigma <- HalfNormal(scale)
    sample v : G <- Normal(0.0, sigma)
    return v

program crossed : Resp -> Resp
    sample by_subject <- random_intercepts(Subject, 1.0)
    sample by_verb <- random_intercepts(Verb, 2.0)
    let total = sum(by_subject) + sum(by_verb)
    observe y : Resp <- Normal(total, 1.0)
    return total

export crossed
"""


def test_a_template_call_inlines_fresh_sites_under_its_target() -> None:
    m = model(TEMPLATES, "crossed")
    assert m.site_names == (
        "by_subject$sigma",
        "by_subject$v",
        "by_verb$sigma",
        "by_verb$v",
        "y",
    )
    v = m.run({}).values
    assert v["by_subject$v"].shape == (4,) and v["by_verb$v"].shape == (3,)
    total = v["by_subject$v"].sum() + v["by_verb$v"].sum()
    want = (
        D.HalfNormal(1.0).log_prob(v["by_subject$sigma"])
        + D.Normal(0.0, v["by_subject$sigma"]).log_prob(v["by_subject$v"]).sum()
        + D.HalfNormal(2.0).log_prob(v["by_verb$sigma"])
        + D.Normal(0.0, v["by_verb$sigma"]).log_prob(v["by_verb$v"]).sum()
        + D.Normal(total, 1.0).log_prob(v["y"]).sum()
    )
    torch.testing.assert_close(m.log_joint({}, v)[0], want)


def test_a_template_is_not_run_on_its_own() -> None:
    with pytest.raises(QvrError, match="template over 'G' \\(FinSet\\)"):
        model(TEMPLATES.replace("export crossed", "export random_intercepts"), "random_intercepts")


def test_a_template_with_an_unnamed_codomain_is_typed_and_runs_through_its_caller() -> None:
    src = TEMPLATES.replace(
        "program random_intercepts(G : FinSet, scale : Real) : G -> G",
        "program random_intercepts(G : FinSet, scale : Real) : G -> 1",
    )
    checked = check(src)
    assert "random_intercepts" in checked.models  # typed, not names only (QVR011)
    assert [d.code for d in checked.diagnostics if d.code == "QVR011"] == []
    m = compile_model(checked, "crossed")
    run = m.run({}, {"y": torch.zeros(5)})
    assert run.values["by_subject$v"].shape == (4,) and run.values["by_verb$v"].shape == (3,)


ONE_STATE = """
object County : FinSet 4
object State : FinSet 1

program p : County -> County
    sample start <- Dirichlet(1.0) [over=State]
    sample emit : State <- Dirichlet(1.0) [over=County, iid_over=State]
    marginalize s : State <- Categorical(start) [over=County]
        {body}
    return o
"""


@pytest.mark.parametrize(
    "body",
    [
        "observe o : County <- Categorical(emit[s])",
        "let e = emit[s]\n        observe o : County <- Categorical(e)",
    ],
    ids=["argument", "let"],
)
def test_a_value_gathers_a_one_entry_plate_that_has_no_axis(body: str) -> None:
    """`State : FinSet 1` has no tensor axis; `emit[s]` reads the one row, not the
    County axis (found by the fuzzer: 'index 2 is out of bounds for dimension 1')."""
    m = model(ONE_STATE.format(body=body), "p")
    emit = torch.tensor([0.1, 0.2, 0.3, 0.4])
    o = torch.tensor([2, 3, 3, 0])
    got = m.log_joint({}, {"start": torch.ones(1), "emit": emit, "o": o})
    want = D.Dirichlet(torch.ones(4)).log_prob(emit) + torch.log(emit[o]).sum()
    torch.testing.assert_close(got[0].float(), want)  # float64, checked at float32
