"""The PyMC export (qvr_core.export.pymc) means what qvr means.

Proved by running it: each example model's exported module is executed, its log
density at a fixed point equals qvr's log joint there (constants kept, `marginalize`
scopes summed out exactly), and PyMC's NUTS finds the posterior means qvr's NUTS
finds. Around that: every family and function the writer knows computes what qvr's
runtime computes, the text is what a PyMC user writes, what PyMC cannot say is
located, and every program of the quivers corpus either exports (and compiles) or is
diagnosed; that every exported model (the corpus, posteriordb's programs) scores as
qvr does is tests/export/test_every_model_scores.py.

PyTensor compiles C with g++ by default, which costs minutes for the HMM's graph on
two cores. The log densities here are compiled by `PYTHON`: PyMC's own graph rewrites
(FAST_RUN's, which make `pm.math.logsumexp` and `log(sigmoid)` stable, as NUTS's
backends have them) run by PyTensor's Python linker, no C; FAST_COMPILE would skip the
rewrites and score a scope's log-sum-exp of terms near -3000 as -inf. NUTS runs through
`nuts_sampler="numpyro"` (the JAX backend: compiled in seconds, 4 chains vectorized).
Measured on this two-core machine (other jobs beside): the tests but NUTS about 30 s
(the corpus models 14 s of it, now in test_every_model_scores.py); PyMC's six NUTS
runs 75 s to 2.5 min, beside qvr's own reference runs (`reference.qvr_posterior`,
cached for the session), which took 14 min on the busy machine (the HMM 10 of them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pymc")

import pymc as pm
import pytensor
import pytensor.tensor as pt

from qvr_core.builtins import FAMILIES, FUNCTIONS, OPERATORS
from qvr_core.check import check
from qvr_core.check.terms import Call, Num, Op, Ref, Term, Unary
from qvr_core.export import TARGETS, export_program
from qvr_core.export.pymc import PYMC_FAMILIES, family_call
from qvr_core.export.pymc.terms import FUNCTIONS as WRITTEN
from qvr_core.export.pymc.terms import TermPrinter
from qvr_core.text.span import Span
from tests.export import jax_cache, reference
from tests.export.pymc_points import value_point

PYMC = TARGETS["pymc"]
jax_cache.enable()  # NUTS runs through NumPyro: XLA's programs kept (tests/export/jax_cache.py)
#: PyMC's rewrites without C compilation (the module docstring says why).
PYTHON = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")


def exported(name: str) -> str:
    """The example `name` exported to PyMC (it must export)."""
    module = reference.checked(name)
    result = export_program(module, PYMC, reference.program(name), source=f"{name}.qvr")
    assert result.text is not None, result.diagnostics
    return result.text


def load(text: str) -> dict[str, Any]:
    """The exported module's namespace (its `__main__` block not run)."""
    namespace: dict[str, Any] = {"__name__": "exported_model"}
    exec(compile(text, "<pymc export>", "exec"), namespace)
    return namespace


def build(name: str) -> pm.Model:
    """The example's PyMC model on its data file, read as JSON (indices from 0)."""
    model: pm.Model = load(exported(name))["build_model"](**reference.data(name))
    return model


# ---------------------------------------------------------------- the text


def test_eight_schools_is_written_as_a_pymc_user_writes_it() -> None:
    text = exported("eight_schools_noncentered")
    assert text.startswith("# PyMC code for the QVR program `eight_schools`")
    for line in (
        "import numpy as np",
        "import pymc as pm",
        "def build_model(*, sigma, y, **_unread: object) -> pm.Model:",
        '    coords = {"School": range(8)}',
        "    with pm.Model(coords=coords) as model:",
        '        sigma = pm.Data("sigma", np.asarray(sigma, dtype="float64"), dims="School")',
        '        mu = pm.Normal("mu", mu=0.0, sigma=5.0)',
        '        tau = pm.HalfCauchy("tau", beta=5.0)',
        '        theta_raw = pm.Normal("theta_raw", mu=0.0, sigma=1.0, dims="School")',
        '        theta = pm.Deterministic("theta", mu + tau * theta_raw, dims="School")',
        '            observed=np.asarray(y, dtype="float64"),',
        "    return model",
        'if __name__ == "__main__":',
        "        idata = pm.sample()",
    ):
        assert line in text.splitlines(), line
    assert "pytensor" not in text  # nothing here needs it


def test_a_mixture_is_pm_mixture_and_nested_scopes_are_cached_potentials() -> None:
    mixture = exported("gaussian_mixture")
    assert (
        '        weights = pm.Dirichlet("weights", a=np.full(2, 2.0), dims="Component")' in mixture
    )
    assert "        pm.Mixture(" in mixture
    assert "            comp_dists=pm.Normal.dist(mu=mu, sigma=sigma)," in mixture
    assert "Potential" not in mixture
    hmm = exported("hmm")
    assert 'trans = pm.Dirichlet("trans", a=np.full(2, 1.0), dims=("State", "State_2"))' in hmm
    assert hmm.count("@functools.cache") == 3  # the inner scopes, by the state before
    assert "        def sum_out_s2(s1):" in hmm
    assert "                lp = pm.logp(pm.Categorical.dist(p=trans[s1]), s2)" in hmm
    assert '        pm.Potential("s0", pt.sum(sum_out_s0()))' in hmm
    assert all(len(line) <= 100 for line in hmm.splitlines())


def test_a_let_over_the_data_rows_is_traced_only_when_returned() -> None:
    text = exported("hierarchical_logistic")
    assert (
        '        county = pm.Data("county", np.asarray(county, dtype="int64"), dims="Obs")' in text
    )
    assert "        eta = alpha[county] + beta * x" in text  # not traced: rows x draws
    assert "        p = pm.math.sigmoid(eta)" in text
    assert 'alpha = pm.Deterministic("alpha", mu_alpha + sigma_alpha * alpha_raw,' in text
    assert '"y", p=p, observed=np.asarray(y, dtype="int64"), dims="Obs")' in text


def test_the_main_block_samples_the_data_file_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python FILE DATA.json` builds the model from the file and calls `pm.sample`
    (recorded here: the NUTS runs themselves are below)."""
    calls: list[pm.Model] = []

    def sample() -> str:
        calls.append(pm.modelcontext(None))
        return "idata"

    monkeypatch.setattr(pm, "sample", sample)
    monkeypatch.setattr(pm, "summary", lambda idata: f"summary of {idata}")
    data = tmp_path / "data.json"
    data.write_text(json.dumps(reference.data("linear_regression")))
    monkeypatch.setattr(sys, "argv", ["linear_regression_pymc.py", str(data)])
    exec(compile(exported("linear_regression"), "main", "exec"), {"__name__": "__main__"})
    (model,) = calls
    assert sorted(v.name for v in model.free_RVs) == ["alpha", "beta", "sigma"]
    assert np.allclose(model["x"].get_value(), reference.data("linear_regression")["x"])


def test_names_python_reserves_are_renamed_and_variables_keep_theirs() -> None:
    source = """\
object School : FinSet 3

program clash : School -> School
    sample pm <- Normal(0.0, 1.0)
    sample lambda : School <- Normal(pm, 1.0)
    let range = exp(lambda)
    observe model : School <- Normal(range, 1.0)
    return range

export clash
"""
    module = check(source)
    assert module.ok, module.errors
    text = export_program(module, PYMC, "clash").text
    assert text is not None
    assert 'pm_ = pm.Normal("pm", mu=0.0, sigma=1.0)' in text
    assert 'lambda_ = pm.Normal("lambda", mu=pm_, sigma=1.0, dims="School")' in text
    assert "def build_model(*, model_, **_unread: object) -> pm.Model:" in text
    assert 'RENAMED = {"model": "model_"}' in text
    model = load(text)["build_model"](model_=[1.0, 2.0, 0.5])
    point: dict[str, Any] = {"pm": 0.3, "lambda": np.array([0.1, -0.2, 0.4])}
    logp = model.compile_logp(jacobian=False, mode=PYTHON)
    normal = pm.logp(pm.Normal.dist(0.0, 1.0), 0.3).eval()
    normal += pm.logp(pm.Normal.dist(0.3, 1.0), point["lambda"]).eval().sum()
    normal += pm.logp(pm.Normal.dist(np.exp(point["lambda"]), 1.0), [1.0, 2.0, 0.5]).eval().sum()
    assert float(logp(point)) == pytest.approx(float(normal), rel=1e-12)


# ---------------------------------------------------------------- what it cannot say


def located(source: str, program: str) -> list[tuple[int, int, str]]:
    module = check(source)
    assert module.ok, module.errors
    result = export_program(module, PYMC, program)
    assert result.text is None
    assert all(d.code == "QVR701" for d in result.diagnostics)
    return [(d.span.start_line + 1, d.span.start_col + 1, d.message) for d in result.diagnostics]


def test_a_family_pymc_lacks_is_located_at_its_step() -> None:
    source = """\
object Obs : FinSet 20

program tails : Obs -> Obs
    sample xi <- Normal(0.0, 0.3)
    observe y : Obs <- GeneralizedPareto(0.0, 1.0, xi)
    return xi

program angle : Obs -> Obs
    sample a <- VonMises(0.0, 2.0)
    observe y : Obs <- Normal(a, 1.0)
    return a

program unsized : Obs -> Obs
    sample w <- Dirichlet(1.0)
    observe y : Obs <- Categorical(w)
    return w

export tails
export angle
export unsized
"""
    tails = located(source, "tails")
    assert [(line, col) for line, col, _ in tails] == [(5, 5)]
    assert "PyMC has no GeneralizedPareto distribution" in tails[0][2]
    angle = located(source, "angle")
    assert [(line, col) for line, col, _ in angle] == [(9, 5)]
    assert "[-pi, pi]" in angle[0][2]
    unsized = located(source, "unsized")  # at the argument: `1.0` spread to what size?
    assert [(line, col) for line, col, _ in unsized] == [(14, 27)]
    assert "needs the size of one draw" in unsized[0][2]


def test_what_a_summed_out_scope_cannot_say_is_located() -> None:
    source = """\
object K : FinSet 2
object Row : FinSet 30

program scoped : Row -> Row
    sample w <- Dirichlet(1.0) [over=K]
    sample mu : K <- Normal(0.0, 5.0)
    marginalize z : K <- Categorical(w) [over=Row, reduction=max]
        sample e <- HalfNormal(1.0)
        observe y : Row <- Normal(mu[z], e)
    return mu

program counts : Row -> Row
    sample q <- Beta(1.0, 1.0)
    marginalize n : Row <- Poisson(3.0)
        observe y : Row <- Binomial(n, q)
    return q

export scoped
export counts
"""
    scoped = located(source, "scoped")
    assert [(line, col) for line, col, _ in scoped] == [(7, 5), (8, 9)]
    assert "reduction=max" in scoped[0][2]
    assert "inside `marginalize z`" in scoped[1][2]
    counts = located(source, "counts")
    assert [(line, col) for line, col, _ in counts] == [(14, 5)]
    assert "summing out a Poisson" in counts[0][2]


# ---------------------------------------------------------------- the meaning


def test_each_family_scores_as_qvrs_runtime_does() -> None:
    """Each family's registry example, written as the export writes it, scores a torch
    draw of qvr's distribution as qvr's runtime scores it (one PyTensor function for
    all of them, so one compilation)."""
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.distributions import make_distribution

    calls = [(f, dict(FAMILIES[f].example)) for f in sorted(PYMC_FAMILIES)]
    calls.append(("Categorical", {"logits": [0.3, -1.0, 2.0]}))  # the other schema
    expected, scores = [], []
    for family, example in calls:
        tensors = {k: torch.tensor(v, dtype=torch.float64) for k, v in example.items()}
        qvrs = make_distribution(family, tensors, FAMILIES[family].example_space)
        torch.manual_seed(0)
        draws = qvrs.sample((5,))
        expected.append(qvrs.log_prob(draws).numpy())
        call = family_call(family, {k: f"args[{k!r}]" for k in example})
        assert call is not None
        args = {k: np.asarray(v) for k, v in example.items()}
        scores.append(pm.logp(eval(call, {"pm": pm, "np": np, "args": args}), draws.numpy()))
    got = pytensor.function([], scores, mode=PYTHON)()
    for (family, _), ours, theirs in zip(calls, got, expected, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9, err_msg=family)


def test_each_function_and_operator_computes_what_qvrs_runtime_does() -> None:
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.evaluate import evaluate

    here = Span(0, 0, 0, 0, 0, 0)
    rng = np.random.default_rng(0)
    values = {"x": rng.normal(size=(2, 3)), "y": rng.normal(size=(2, 3))}
    values["p"] = np.abs(values["x"]) + 1.1  # inside every domain (acosh: >= 1)
    values["u"] = 0.9 * np.tanh(values["x"])  # inside (-1, 1)
    inside = {"asin": "u", "acos": "u", "atanh": "u", "erfinv": "u"}
    values["v"], values["s"] = rng.normal(size=3), np.array(1.3)  # points; a number
    values["spd"] = np.cov(rng.normal(size=(3, 8))) + np.eye(3)  # positive definite
    v, number, spd = Ref("v", here), Ref("s", here), Ref("spd", here)
    linear = {"gram": (v, number, number), "matrix": (spd, number), "matrix_vector": (spd, v)}
    terms: list[Term] = []
    # a recurrence would need pytensor.scan; `lags` and `tail` (an object's size) are slices;
    # an ODE solver's right-hand side, a Python function of a define (QVR701 at the call)
    scanned = {n for n, f in FUNCTIONS.items() if f.shape == "series" and not f.objects}
    scanned |= {n for n, f in FUNCTIONS.items() if f.shape == "ode"}
    assert set(FUNCTIONS) - set(WRITTEN) == scanned
    for fn, f in FUNCTIONS.items():
        if fn in scanned:
            continue
        if f.objects:  # the size of a plate, as the checker writes it: `Num`
            terms.append(Call(fn, (Ref("x", here), Num(2.0, here)), here))
            continue
        if f.shape in linear:
            terms.append(Call(fn, linear[f.shape][: f.arity], here))
            continue
        domain = "p" if fn in ("log", "log2", "log10", "sqrt", "rsqrt", "acosh") else "x"
        arg = Ref(inside.get(fn, domain), here)
        terms.append(Call(fn, (arg,) if f.arity == 1 else (Ref("p", here), Ref("y", here)), here))
        if f.reduces_alone:
            terms.append(Call(fn, (arg,), here))
        if f.method and f.shape == "reduce":
            terms.append(Call(fn, (arg,), here, axis=1))
    terms += [Op(op, Ref("x", here), Ref("y", here), here) for op in OPERATORS]
    terms += [Unary("-", Ref("x", here), here), Unary("not", Ref("x", here), here)]
    printer = TermPrinter({}, (), (), ())
    namespace = {"pt": pt, "pm": pm, "np": np, **{k: pt.as_tensor(v) for k, v in values.items()}}
    got = pytensor.function([], [eval(printer(t), namespace) for t in terms], mode=PYTHON)()
    tensors = {k: torch.tensor(v) for k, v in values.items()}
    for term, ours in zip(terms, got, strict=True):
        theirs = evaluate(term, lambda name, _line: tensors[name]).numpy()
        assert np.shape(ours) == np.shape(theirs), printer(term)
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12, err_msg=printer(term))


@pytest.mark.parametrize("name", sorted(reference.MODELS))
def test_the_log_density_at_a_fixed_point_is_qvrs_log_joint(name: str) -> None:
    """PyMC keeps every constant; `compile_logp(jacobian=False)` at the point moved to
    the value variables (`value_point`) is the density in the constrained space, which is
    what `qvr_log_joint` is. The scopes' Potentials and the mixture sum the discrete
    coordinates out exactly, as qvr does."""
    model = build(name)
    logp = model.compile_logp(jacobian=False, mode=PYTHON)
    ours = float(logp(value_point(model, reference.fixed_point(name))))
    assert ours == pytest.approx(reference.qvr_log_joint(name), rel=1e-6)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # qvr's own NUTS (the reference) is the long part
@pytest.mark.parametrize("name", sorted(reference.MODELS))
def test_pymc_nuts_finds_qvrs_posterior_means(name: str) -> None:
    """PyMC's NUTS (4 chains x (500 tune + 500 draws), through NumPyro, chains
    vectorized on the CPU) on the export agrees with qvr's NUTS within Monte Carlo
    error, site by site (the Deterministics, which qvr does not report, aside). Mixture
    and HMM labels are exchangeable and qvr's chains switch them: those compare
    label-invariant views (sorted components; the HMM's states in a canonical order)."""
    with build(name):
        idata = pm.sample(
            draws=reference.DRAWS,
            tune=reference.DRAWS,
            chains=4,
            random_seed=0,
            nuts_sampler="numpyro",
            nuts_sampler_kwargs={"chain_method": "vectorized"},
            progressbar=False,
            compute_convergence_checks=False,
        )
    draws = {str(k): np.asarray(v) for k, v in idata.posterior.data_vars.items()}
    reference.assert_posterior_agrees(name, draws)


# ---------------------------------------------------------------- the corpus


def test_every_corpus_program_exports_or_is_diagnosed() -> None:
    """quivers' own files and the examples: no exception; each program's export is
    Python that compiles, or each of its problems is a located QVR701 diagnostic."""

    def compiles(path: Path, program: str, text: str) -> None:
        compile(text, f"{path.name}:{program}", "exec")

    counts = reference.corpus_exports(PYMC, compiles)
    assert counts["exported"] >= 60 and counts["diagnosed"] >= 50, counts
