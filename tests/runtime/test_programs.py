"""Programs compiled from small sources: every family and role, sharing, densities, errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from torch import distributions as D

from qvr_core.dsl import loads
from qvr_core.inference.trace import trace
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.program import ProgramModule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def compile_source(source: str, name: str | None = None) -> ProgramModule:
    torch.manual_seed(0)
    prog = loads(textwrap.dedent(source))
    model = prog[name] if name else prog.morphism
    assert isinstance(model, ProgramModule)
    return model


SMALL = """
    object Token : FinSet 5
    object Emb : Real 3
    object Hid : Real 2
    morphism e : Token -> Emb [role=embed]
    morphism k : Emb -> Hid [role=kernel, scale=0.5, param_source=linear] ~ Normal
    morphism head : Hid -> Token [role=kernel, param_source=linear] ~ Categorical
    let enc = e >> k
    program small : Token -> Token
        sample h <- enc
        let g = tanh(h) * 2 - 1
        observe y : Token <- head(g)
        return y
    program twice : Token -> Hid
        sample h <- enc
        return h
    export small
    export twice
    export enc
"""

STACK = """
    object X : Real 4
    morphism blk : X -> X [role=kernel, param_source=linear, scale=0.1] ~ Normal
    let deep = stack(blk, 3)
    let loop = repeat(blk, 3)
    program p : X -> X
        sample a <- deep
        sample b <- loop(a)
        return b
    export p
"""

ZOO = """
    object S : FinSet 3
    object Coin : FinSet 2
    object Rate : Positive 2
    object Gate : Unit 2
    object Mix : Simplex 3
    object Feat : Real 4
    morphism start : S -> S [role=latent]
    morphism rate : S -> Rate [role=kernel] ~ LogNormal
    morphism gate : Rate -> Gate [role=kernel] ~ LogitNormal
    morphism mix : Gate -> Mix [role=kernel] ~ Dirichlet
    morphism feat : Mix -> Feat [role=kernel] ~ Deterministic
    morphism coin : Feat -> Coin [role=kernel] ~ Bernoulli
    program zoo : S -> Coin
        sample s <- start
        sample r <- rate(s)
        sample g <- gate(r)
        sample m <- mix(g)
        sample f <- feat(m)
        observe c : Coin <- coin(f)
        return c
    export zoo
"""

DISCRETE_SCAN = """
    object Obs : FinSet 4
    object S : FinSet 3
    morphism step : Obs * S -> S [role=kernel, hidden_dim=8] ~ Categorical
    morphism emit : S -> Obs [role=kernel, hidden_dim=8] ~ Categorical
    program hmm : Obs -> Obs
        sample s <- scan(step)
        observe o : Obs <- emit(s)
        return o
    export hmm
"""


# ---------------------------------------------------------------- densities


def test_log_joint_equals_a_hand_computation() -> None:
    model = compile_source(SMALL)
    m = model.morphisms
    x = torch.tensor([0, 4, 2])
    values = model.run(x).values
    h, y = values["h"], values["y"]
    k, head = m["k"].net, m["head"].net
    # linear parameter networks scale their input by 1/sqrt(fan-in) (docs/runtime.md)
    e = m["e"].table[x]
    lp_h = D.Normal(e @ k.weight.T / e.shape[-1] ** 0.5 + k.bias, 0.5).log_prob(h).sum(-1)
    g = torch.tanh(h) * 2 - 1
    logits = g @ head.weight.T / g.shape[-1] ** 0.5 + head.bias
    lp_y = torch.log_softmax(logits, -1)[torch.arange(3), y]
    joint = model.log_joint(x, values)
    assert torch.allclose(joint, lp_h + lp_y, atol=1e-5)
    assert torch.equal(joint, model.log_joint(x, values))


def test_log_joint_is_differentiable_in_the_site_values() -> None:
    model = compile_source(SMALL)
    x = torch.tensor([1, 2])
    values = {k: v.detach() for k, v in model.run(x).values.items()}
    values["h"].requires_grad_(True)
    model.log_joint(x, values).sum().backward()
    assert values["h"].grad is not None and values["h"].grad.abs().sum() > 0


def test_observations_clamp_and_values_score() -> None:
    model = compile_source(SMALL)
    x = torch.tensor([1, 2, 3])
    y = torch.tensor([4, 4, 0])
    assert torch.equal(model.rsample(x, {"y": y}), y)
    result = model.run(x, observations={"y": y})
    assert torch.equal(result.values["y"], y) and torch.equal(result.output, y)
    again = model.run(x, values=result.values)
    assert torch.allclose(again.log_joint, result.log_joint)


def test_mean_runs_every_site_at_its_mean() -> None:
    model = compile_source(SMALL)
    x = torch.tensor([1, 2])
    m = model.morphisms
    h = m["k"].mean(m["e"].table[x])
    expected = m["head"].params(torch.tanh(h) * 2 - 1).argmax(-1)
    assert torch.equal(model.mean(x), expected)


def test_every_family_and_role_runs_with_the_right_support() -> None:
    model = compile_source(ZOO)
    supports = {n: model.site_support(n) for n in model.site_names}
    assert supports == {
        "s": "finset",
        "r": "positive",
        "g": "unit",
        "m": "simplex",
        "f": "real",
        "c": "finset",
    }
    x = model.example_input(16, 1)
    v = model.run(x).values
    assert v["s"].dtype == torch.int64 and ((v["s"] >= 0) & (v["s"] < 3)).all()
    assert (v["r"] > 0).all() and ((v["g"] > 0) & (v["g"] < 1)).all()
    assert torch.allclose(v["m"].sum(-1), torch.ones(16), atol=1e-5)
    assert set(v["c"].tolist()) <= {0, 1} and v["c"].dtype == torch.int64
    lp = model.run(x, values=v).log_probs
    assert torch.equal(lp["f"], torch.zeros(16))  # Deterministic
    assert all(torch.isfinite(t).all() for t in lp.values())
    assert model.site_event_shape("s") == () and model.site_event_shape("m") == (3,)


def test_latent_site_scores_its_matrix_row() -> None:
    model = compile_source(ZOO)
    start = model.morphisms["start"]
    x, s = torch.tensor([0, 2]), torch.tensor([1, 1])
    lp = model.steps["s"].log_prob(x, s)
    assert torch.allclose(lp, start.matrix[x, s].log())


def test_scan_with_a_discrete_state() -> None:
    model = compile_source(DISCRETE_SCAN)
    x = torch.randint(0, 4, (5, 6))
    s = model._step_s.rsample(x)
    assert s.shape == (5,) and s.dtype == torch.int64
    step = model.morphisms["step"]
    h = torch.zeros(5, dtype=torch.int64)
    for t in range(6):
        h = step.mean(torch.stack([x[:, t], h], -1))
    assert torch.equal(model._step_s.mean(x), h)
    assert model.log_joint(x, model.run(x).values).shape == (5,)


# ------------------------------------------------------------ parameters


def test_stack_copies_are_independent_and_repeat_shares_the_declared_morphism() -> None:
    model = compile_source(STACK)
    names = sorted(model.morphisms.keys())
    assert names == ["blk", "blk__stack0_0", "blk__stack0_1", "blk__stack0_2"]
    assert sum(p.numel() for p in model.parameters()) == 4 * (4 * 4 + 4)
    weights = [model.morphisms[n].net.weight for n in names]
    assert len({id(w) for w in weights}) == 4
    blk = model.morphisms["blk"]
    assert all(m is blk for m in model._step_b.chain())
    x = torch.randn(2, 4)
    with torch.no_grad():
        model.morphisms["blk__stack0_1"].net.weight.add_(1.0)
    assert not torch.equal(
        model.morphisms["blk__stack0_0"].net.weight, model.morphisms["blk__stack0_1"].net.weight
    )
    deep = model.morphisms
    expected = deep["blk__stack0_2"].mean(deep["blk__stack0_1"].mean(deep["blk__stack0_0"].mean(x)))
    assert torch.allclose(model._step_a.mean(x), expected, atol=1e-6)


def test_a_morphism_used_by_several_sites_has_one_set_of_parameters() -> None:
    prog = loads(textwrap.dedent(SMALL))
    small, twice = prog["small"], prog["twice"]
    assert small.morphisms["k"] is twice.morphisms["k"]
    names = [n for n, _ in small.named_parameters()]
    assert len(names) == len(set(names)) == 5  # table, k.weight, k.bias, head.weight, head.bias


def test_exported_let_is_a_morphism_with_the_same_parameter_names() -> None:
    enc = loads(textwrap.dedent(SMALL))["enc"]
    assert {n for n, _ in enc.named_parameters()} == {
        "morphisms.e.table",
        "morphisms.k.net.weight",
        "morphisms.k.net.bias",
    }
    assert enc.rsample(torch.tensor([1, 2])).shape == (2, 2)


# ------------------------------------------------------------------- trace


def test_trace_records_every_site() -> None:
    model = compile_source(SMALL)
    x, y = torch.tensor([1, 2]), torch.tensor([0, 3])
    tr = trace(model, x, {"y": y})
    assert list(tr.sites) == ["h", "y"]
    assert tr.sites["y"].is_observed and not tr.sites["h"].is_observed
    assert torch.equal(tr.sites["y"].value, y)
    values = {n: s.value for n, s in tr.sites.items()}
    assert torch.allclose(tr.log_joint, model.log_joint(x, values))
    assert tr.log_joint.shape == (2,)


# ------------------------------------------------------------------ errors


@pytest.fixture(scope="module")
def vanilla() -> ProgramModule:
    from qvr_core.dsl import load

    model = load(EXAMPLES / "vanilla_rnn_lm.qvr").morphism
    assert isinstance(model, ProgramModule)
    return model


PROMPTS = torch.randint(0, 256, (4, 8))


@pytest.mark.parametrize(
    ("call", "site", "fragments"),
    [
        (
            lambda m: m.rsample(torch.tensor([1, 2, 3, 4])),
            None,
            ["input (read by site h)", "expected (B, L) int64", "got (4,) int64"],
        ),
        (
            lambda m: m.rsample(PROMPTS.clone().index_fill_(1, torch.tensor([3]), 256)),
            None,
            ["input (read by site h)", "index 256 is out of range for Token"],
        ),
        (
            lambda m: m.rsample(PROMPTS, {"next_token": torch.zeros(3, dtype=torch.long)}),
            "next_token",
            ["site 'next_token'", "expected (4,) int64", "got (3,) int64", "batch"],
        ),
        (
            lambda m: m.rsample(PROMPTS, {"next_token": torch.zeros(4)}),
            "next_token",
            ["site 'next_token'", "got (4,) float32", "int64"],
        ),
        (
            lambda m: m.rsample(PROMPTS, {"next_token": torch.full((4,), 999)}),
            "next_token",
            ["site 'next_token'", "index 999 is out of range"],
        ),
        (
            lambda m: m.log_joint(PROMPTS, {"h": torch.zeros(4, 64)}),
            "h",
            ["site 'h'", "expected (4, 128) float32", "got (4, 64) float32"],
        ),
        (
            lambda m: m.run(PROMPTS, observations={"nxt": torch.zeros(4)}),
            "nxt",
            ["no site 'nxt'", "h, next_token"],
        ),
    ],
    ids=["rank", "token-range", "batch", "dtype", "obs-range", "value-shape", "unknown"],
)
def test_runtime_errors_name_the_site_and_shapes(
    vanilla: ProgramModule, call, site: str | None, fragments: list[str]
) -> None:
    with pytest.raises(QvrRuntimeError) as err:
        call(vanilla)
    for fragment in fragments:
        assert fragment in str(err.value)
    assert err.value.site == site


def test_site_module_errors_name_the_morphism(vanilla: ProgramModule) -> None:
    with pytest.raises(QvrRuntimeError, match=r"tok_embed >> scan\(cell\): input"):
        vanilla._step_h.rsample(torch.tensor([1, 2]))


def test_explicit_reverse_reads_right_to_left() -> None:
    model = compile_source(
        """
        object Token : FinSet 6
        object Emb : Real 3
        object Hid : Real 2
        morphism e : Token -> Emb [role=embed]
        morphism c : Emb * Hid -> Hid [role=kernel, scale=0.1, hidden_dim=4] ~ Normal
        program back : Token -> Hid
            sample h <- e >> scan(c, reverse=true)
            return h
        export back
        """
    )
    m = model.morphisms
    x = torch.randint(0, 6, (3, 5))
    h = torch.zeros(3, 2)
    for t in reversed(range(5)):
        h = m["c"].mean(torch.cat([m["e"].table[x[:, t]], h], -1))
    assert torch.allclose(model.mean(x), h, atol=1e-6)


def test_program_without_sites_splits_its_parameters_and_computes() -> None:
    model = compile_source(
        """
        object X : Real 2
        program f (a, b) : X * X -> X
            let c = max(a, b) + 1
            return c
        export f
        """
    )
    x = torch.randn(3, 4)
    assert torch.allclose(model.rsample(x), torch.maximum(x[:, :2], x[:, 2:]) + 1)
    assert torch.equal(model.log_joint(x, {}), torch.zeros(3))
