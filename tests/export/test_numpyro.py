"""The NumPyro export (qvr_core.export.numpyro) means what qvr means.

Proved by running it: each example model's exported module is executed, its log
density at a fixed point equals qvr's log joint there (constants kept, summed-out
sites summed exactly), and NumPyro's NUTS finds the posterior means qvr's NUTS finds.
Around that: every family the writer knows scores as qvr's torch distribution does,
the text is what a NumPyro user writes, what NumPyro cannot say is located, and
every program of the quivers corpus either exports (and compiles) or is diagnosed.

JAX computes here in float64, as qvr does: a module fixture turns `jax_enable_x64`
on and restores it afterwards, so the suite's other user of JAX (the PyMC tests'
numpyro sampler) finds it as it left it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numpyro")
pytest.importorskip("funsor")

import jax
import jax.numpy as jnp
import numpyro.distributions as dist
from numpyro.contrib.funsor import enum
from numpyro.contrib.funsor import log_density as enumerated_log_density
from numpyro.handlers import seed, substitute, trace
from numpyro.infer import MCMC, NUTS
from numpyro.infer.util import log_density

from qvr_core.builtins import FAMILIES, FUNCTIONS, OPERATORS
from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.export import TARGETS, export_program
from qvr_core.export.numpyro import CALLS, family_call
from qvr_core.export.numpyro.terms import Terms
from tests.export import jax_cache, reference

NUMPYRO = TARGETS["numpyro"]
jax_cache.enable()  # what XLA compiles, kept between runs (tests/export/jax_cache.py)


@pytest.fixture(scope="module", autouse=True)
def float64() -> Iterator[None]:
    """JAX in float64 for this module only (qvr computes in float64)."""
    before = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


def exported(name: str) -> str:
    """The example `name` exported to NumPyro (it must export)."""
    module = reference.checked(name)
    result = export_program(module, NUMPYRO, reference.program(name), source=f"{name}.qvr")
    assert result.text is not None, result.diagnostics
    return result.text


def load(text: str) -> dict[str, Any]:
    """The exported module's namespace (its `__main__` block not run)."""
    namespace: dict[str, Any] = {"__name__": "exported_model"}
    exec(compile(text, "<numpyro export>", "exec"), namespace)
    return namespace


def model_data(namespace: dict[str, Any], name: str) -> dict[str, Any]:
    """The example's data file read by the export's own `load_data`."""
    path = reference.MODELS_DIR / f"{reference.MODELS[name]}.json"
    loaded: dict[str, Any] = namespace["load_data"](str(path))
    return loaded


def plate_nesting(model: Any, kwargs: dict[str, Any], values: dict[str, Any] | None = None) -> int:
    """The most plates any site of one run of `model` sits in, its latents at `values`
    where given (an `ImproperUniform` site, an ordered mean's, has no draws). The run is
    only traced (`jax.make_jaxpr`), not computed: eagerly, each of its random draws and
    operations is an XLA program compiled on its own (the HMM's run: 7 s of compiling)."""
    nesting: list[int] = []

    def run() -> int:
        at = substitute(seed(model, 0), data=values or {})
        sites = trace(at).get_trace(**kwargs).values()
        nesting.append(max((len(site["cond_indep_stack"]) for site in sites), default=0))
        return 0

    jax.make_jaxpr(run)()
    return nesting[0]


# ---------------------------------------------------------------- the text


def test_eight_schools_is_written_as_a_numpyro_user_writes_it() -> None:
    text = exported("eight_schools_noncentered")
    assert text.startswith("# NumPyro code for the QVR program `eight_schools`")
    for line in (
        "import jax.numpy as jnp",
        "import numpyro",
        "import numpyro.distributions as dist",
        "def model(sigma, y=None):",
        '    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))',
        '    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))',
        '    with numpyro.plate("School", 8):',
        '        theta_raw = numpyro.sample("theta_raw", dist.Normal(0.0, 1.0))',
        '        theta = numpyro.deterministic("theta", mu + tau * theta_raw)',
        '        numpyro.sample("y", dist.Normal(theta, sigma), obs=y)',
        "    return theta",
        '        "sigma": jnp.asarray(raw["sigma"], dtype=float),  # School',
        'if __name__ == "__main__":',
    ):
        assert line in text.splitlines(), line
    assert "Vindex" not in text and "enumerate" not in text


def test_summed_out_sites_are_enumerated_with_vindex_gathers() -> None:
    mixture = exported("gaussian_mixture")
    assert "from numpyro.ops.indexing import Vindex" in mixture
    assert '    weights = numpyro.sample("weights", dist.Dirichlet(jnp.full(2, 2.0)))' in mixture
    assert (
        '        z = numpyro.sample("z", dist.Categorical(probs=weights), '
        'infer={"enumerate": "parallel"})'
    ) in mixture
    assert "dist.Normal(Vindex(mu)[z], Vindex(sigma)[z]), obs=y" in mixture
    hmm = exported("hmm")
    assert hmm.count('infer={"enumerate": "parallel"}') == 4
    assert 'dist.Categorical(probs=Vindex(trans)[s2]), infer={"enumerate": "parallel"}' in hmm
    assert all(len(line) <= 99 for line in hmm.splitlines())


def test_integer_data_is_read_as_integers_and_gathered_directly() -> None:
    text = exported("hierarchical_logistic")
    assert '"county": jnp.asarray(raw["county"], dtype=int),  # Obs' in text
    assert "    eta = alpha[county] + beta * x" in text
    assert '        numpyro.sample("y", dist.Bernoulli(probs=p), obs=y)' in text


def test_the_main_block_runs_nuts_on_the_data_file_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python FILE DATA.json` reads the file with `load_data` and runs 4 NUTS chains of
    500 + 500, one CPU device each (NumPyro's MCMC recorded here: the NUTS runs
    themselves are below)."""
    import numpyro
    import numpyro.infer

    calls: list[tuple[str, Any]] = []

    class Recorder:
        def __init__(self, kernel: Any, **options: Any) -> None:
            calls.append(("MCMC", (kernel, options)))

        def run(self, key: Any, **kwargs: Any) -> None:
            calls.append(("run", kwargs))

        def print_summary(self) -> None:
            calls.append(("summary", None))

    monkeypatch.setattr(numpyro.infer, "MCMC", Recorder)
    monkeypatch.setattr(numpyro, "set_host_device_count", lambda n: calls.append(("devices", n)))
    data = tmp_path / "data.json"
    data.write_text(json.dumps(reference.data("linear_regression")))
    monkeypatch.setattr(sys, "argv", ["linear_regression_numpyro.py", str(data)])
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(exported("linear_regression"), "main", "exec"), namespace)
    (_, devices), (_, (kernel, options)), (_, kwargs), (summary, _) = calls
    assert devices == 4
    assert kernel.model is namespace["model"] and summary == "summary"
    assert options == {"num_warmup": 500, "num_samples": 500, "num_chains": 4}
    assert sorted(kwargs) == ["x", "y"]
    assert np.allclose(kwargs["y"], reference.data("linear_regression")["y"])


def test_names_python_reserves_are_renamed_and_sites_keep_theirs() -> None:
    source = """\
object School : FinSet 3

program clash : School -> School
    sample dist <- Normal(0.0, 1.0)
    sample lambda : School <- Normal(dist, 1.0)
    let jnp = exp(lambda)
    observe model : School <- Normal(jnp, 1.0)
    return jnp

export clash
"""
    module = check(source)
    assert module.ok, module.errors
    text = export_program(module, NUMPYRO, "clash").text
    assert text is not None
    assert 'dist_ = numpyro.sample("dist", dist.Normal(0.0, 1.0))' in text
    assert 'lambda_ = numpyro.sample("lambda", dist.Normal(dist_, 1.0))' in text
    assert "def model(model_=None):" in text
    namespace = load(text)
    point = {"dist": jnp.asarray(0.3), "lambda": jnp.asarray([0.1, -0.2, 0.4])}
    kwargs = {"model_": jnp.asarray([1.0, 2.0, 0.5])}
    ours, _ = log_density(namespace["model"], (), kwargs, point)
    expected = (
        dist.Normal(0.0, 1.0).log_prob(0.3)
        + dist.Normal(0.3, 1.0).log_prob(point["lambda"]).sum()
        + dist.Normal(jnp.exp(point["lambda"]), 1.0).log_prob(kwargs["model_"]).sum()
    )
    assert float(ours) == pytest.approx(float(expected), rel=1e-12)


def every_builtin() -> str:
    """A program with a `let` for each builtin function (each form: a value, one
    number, a method's axis), each operator, unary minus and `not`, a stack and a gather."""
    lines = ["object K : FinSet 4", "object Lag : FinSet 2", "object Short : FinSet 3", ""]
    lines.append("program builtins : K -> K")
    lines.append("    sample x : K <- Beta(2.0, 2.0)")  # in (0, 1): every function is defined
    # the linear algebra on matrices of x's 4 points, positive definite once jittered
    linear = {
        "gram": "x, 0.5, 0.7",
        "matrix": "add_diag(gp_exp_quad_cov(x, 0.5, 0.7), 0.4)",
        "matrix_vector": "cholesky(add_diag(gp_exp_quad_cov(x, 0.5, 0.7), 0.4)), x",
    }
    # a series: a count where the function takes a whole number, 0.4 for a number
    series = {"x": "x", "k": "2", "init": "0.5", "coef": "0.4", "drive": "x"}
    series |= {"L": "Lag", "P": "Short"}  # a plate where it takes an object
    for f in FUNCTIONS.values():
        if f.shape == "ode":  # its right-hand side is a define: QVR701 at the call
            continue
        a = "1.0 + x" if f.name == "acosh" else "x"
        if f.shape in linear:
            more = ", 0.4" if f.shape == "matrix" and f.arity == 2 else ""
            lines.append(f"    let f_{f.name} = {f.name}({linear[f.shape]}{more})")
            continue
        if f.shape == "series":
            lines.append(f"    let f_{f.name} = {f.name}({', '.join(series[p] for p in f.params)})")
            continue
        lines.append(f"    let f_{f.name} = {f.name}({a}{', 0.4' if f.arity == 2 else ''})")
        if f.reduces_alone:
            lines.append(f"    let one_{f.name} = {f.name}(x)")
        if f.method and f.shape == "reduce":
            lines.append(f"    let axis_{f.name} = x.{f.name}(0)")
    for i, op in enumerate(OPERATORS):
        lines.append(f"    let op_{i} = x {op} 0.4")
    lines += [
        "    let negated = -x",
        "    let negation = not (x > 0.5)",
        "    let counted = (x < 0.5) + (x > 0.2) * 2.0 - x / 3.0 % 0.25",
        "    let stacked = [x, 2.0 * x]",
        "    let taken = x[idx]",
        "    return x",
    ]
    return "\n".join(lines) + "\n"


def test_every_builtin_computes_what_qvrs_runtime_computes() -> None:
    """Each `let` written by the term printer, evaluated by JAX, equals the value qvr's
    runtime evaluator gives the same checked term on torch (float64 both)."""
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.evaluate import evaluate
    from qvr_core.runtime.model.program import computing_in

    module = check(every_builtin())
    assert module.ok, module.errors
    model = module.models["builtins"]
    lets = [s for s in model.steps if isinstance(s, Let)]
    names = {n: n for n in ["x", "idx", *(s.name for s in lets)]}
    printer = Terms(names, frozenset({"idx"}), frozenset(), frozenset(), frozenset({"K"}))
    x = np.array([0.15, 0.45, 0.62, 0.93])
    theirs: dict[str, Any] = {"x": torch.tensor(x), "idx": torch.tensor([3, 0, 2])}
    ours: dict[str, Any] = {"x": jnp.asarray(x), "idx": jnp.asarray([3, 0, 2])}
    scope = {"jnp": jnp, "jax": jax}
    for step in lets:
        assert printer.problems(step.term) == [], step.name
        text = printer.text(step.term)
        with computing_in(torch.float64):  # as a model program computes
            theirs[step.name] = evaluate(step.term, lambda n, _line: theirs[n], {"K": 4})
        ours[step.name] = eval(text, {**scope, **ours})
        np.testing.assert_allclose(
            np.asarray(ours[step.name], dtype=float),
            theirs[step.name].double().numpy(),
            rtol=1e-12,
            atol=1e-12,
            err_msg=f"{step.name} = {text}",
        )
    assert len(lets) > len(FUNCTIONS) + len(OPERATORS)


# ---------------------------------------------------------------- what it cannot say


def located(source: str, program: str) -> list[tuple[int, int, str]]:
    module = check(source)
    assert module.ok, module.errors
    result = export_program(module, NUMPYRO, program)
    assert result.text is None
    return [(d.span.start_line + 1, d.span.start_col + 1, d.message) for d in result.diagnostics]


def test_a_family_numpyro_lacks_is_located_at_its_step() -> None:
    source = """\
object Obs : FinSet 20

program tails : Obs -> Obs
    sample xi <- Normal(0.0, 0.3)
    observe y : Obs <- GeneralizedPareto(0.0, 1.0, xi)
    return xi

export tails
"""
    found = located(source, "tails")
    assert [(line, col) for line, col, _ in found] == [(5, 5)]
    assert "no GeneralizedPareto distribution" in found[0][2]


def test_what_enumeration_cannot_say_is_located() -> None:
    source = """\
object K : FinSet 2
object Row : FinSet 30
object Group : FinSet 5

program grouped : Row -> Row
    sample w <- Dirichlet(1.0) [over=K]
    sample mu : K <- Normal(0.0, 5.0)
    marginalize z : K <- Categorical(w) [over=Group, reduction=max]
        observe y : Row <- Normal(mu[z], 1.0) [via=g]
    return mu

program latent_angle : Row -> Row
    sample a <- VonMises(0.0, 2.0)
    observe y : Row <- Normal(a, 1.0)
    return a

export grouped
export latent_angle
"""
    grouped = located(source, "grouped")
    assert [(line, col) for line, col, _ in grouped] == [(8, 5), (9, 9)]
    assert "reduction=max" in grouped[0][2]
    assert "`via=g`" in grouped[1][2]
    angle = located(source, "latent_angle")
    assert [(line, col) for line, col, _ in angle] == [(13, 5)]
    assert "circle" in angle[0][2]


def test_a_reduction_of_an_enumerated_value_is_located_at_the_call() -> None:
    source = """\
object K : FinSet 3
object Row : FinSet 10

program scaled : Row -> Row
    sample w <- Dirichlet(1.0) [over=K]
    sample mu : K <- Normal(0.0, 5.0)
    marginalize z : K <- Categorical(w) [over=Row]
        let m = mu[z]
        let s = sum(m)
        observe y : Row <- Normal(s, 1.0)
    return mu

export scaled
"""
    found = located(source, "scaled")
    assert [(line, col) for line, col, _ in found] == [(9, 17)]
    assert "summed-out site" in found[0][2]


# ---------------------------------------------------------------- the meaning


@pytest.mark.filterwarnings("ignore:Singular sample detected")  # torch's Wishart sampler
@pytest.mark.parametrize("family", sorted(CALLS))
def test_each_family_scores_as_qvrs_runtime_does(family: str) -> None:
    """The registry's example call, written as the export writes it, scores a torch
    draw of qvr's distribution as qvr's runtime scores it."""
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.distributions import make_distribution

    spec = FAMILIES[family]
    example = dict(spec.example)
    theirs = make_distribution(
        family,
        {k: torch.tensor(v, dtype=torch.float64) for k, v in example.items()},
        spec.example_space,
    )
    torch.manual_seed(0)
    draws = theirs.sample((5,))
    expected = theirs.log_prob(draws).numpy()
    texts = {k: f"args[{k!r}]" for k in example}
    if family == "LKJCholesky":
        texts["dimension"] = str(spec.example_space)
    call = family_call(family, texts)
    assert call is not None
    ours = eval(
        call, {"dist": dist, "jnp": jnp, "args": {k: jnp.asarray(v) for k, v in example.items()}}
    )
    got = np.asarray(ours.log_prob(jnp.asarray(draws.numpy())))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(reference.MODELS))
def test_the_log_density_at_a_fixed_point_is_qvrs_log_joint(name: str) -> None:
    """NumPyro keeps every constant; with enumerated sites the log density is funsor's
    enumerated one (`numpyro.contrib.funsor.log_density` under the `enum` handler, as
    NumPyro's NUTS computes it), summing them out exactly as qvr does. Computed under
    `jax.jit`, as NUTS computes it: one XLA program, not one per operation (the HMM's,
    eagerly, compiled 300 programs in 12 s)."""
    text = exported(name)
    namespace = load(text)
    model = namespace["model"]
    kwargs = model_data(namespace, name)
    point = {k: jnp.asarray(v) for k, v in reference.fixed_point(name).items()}
    if 'infer={"enumerate": "parallel"}' in text:
        first = -1 - plate_nesting(model, kwargs)
        enumerated = enum(model, first_available_dim=first)
        density = jax.jit(lambda p: enumerated_log_density(enumerated, (), kwargs, p)[0])
    else:
        density = jax.jit(lambda p: log_density(model, (), kwargs, p)[0])
    ours = density(point)
    theirs = reference.qvr_log_joint(name)
    assert float(ours) == pytest.approx(theirs, rel=1e-6)


SUMMED = """\
object Item : FinSet 6

program coins : Item -> Item
    sample mu <- Normal(0.0, 3.0)
    sample c : Item <- Bernoulli(0.3)
    let shift = mu * c
    observe y : Item <- Normal(shift, 1.0)
    return mu

program inflated : Item -> Item
    sample rate <- Gamma(2.0, 1.0)
    sample p <- Beta(1.0, 1.0)
    marginalize z : Item <- ContinuousBernoulli(p)
        let r = z * rate + 0.001
        observe n : Item <- Poisson(r)
    return rate

export coins
export inflated
"""


@pytest.mark.parametrize(
    ("program", "point", "observed"),
    [
        ("coins", {"mu": 2.0}, {"y": [0.1, 2.5, 3.1, -0.4, 2.9, 0.3]}),
        ("inflated", {"rate": 2.5, "p": 0.4}, {"n": [0, 3, 0, 5, 1, 0]}),
    ],
)
def test_discrete_latents_and_relaxed_scopes_sum_out_as_qvr_sums_them(
    program: str, point: dict[str, float], observed: dict[str, list[float]]
) -> None:
    """A discrete latent qvr sums out for NUTS (a plated Bernoulli) and a `marginalize`
    over a relaxation (a ContinuousBernoulli sums its Bernoulli's 0 and 1) are NumPyro
    enumerations with qvr's log joint (`SummedModel`: the summed site left out)."""
    torch = pytest.importorskip("torch")
    from qvr_core.runtime.model import compile_model
    from qvr_core.runtime.model.enumerate import SummedModel

    module = check(SUMMED)
    assert module.ok, module.errors
    text = export_program(module, NUMPYRO, program).text
    assert text is not None and 'infer={"enumerate": "parallel"}' in text
    model = load(text)["model"]
    kwargs = {k: jnp.asarray(v) for k, v in observed.items()}
    ours, _ = enumerated_log_density(
        enum(model, first_available_dim=-2),
        (),
        kwargs,
        {k: jnp.asarray(v) for k, v in point.items()},
    )
    given = {k: torch.tensor(v, dtype=torch.float64) for k, v in {**point, **observed}.items()}
    summed = SummedModel(compile_model(module, program), list(observed))
    theirs = float(summed.log_joint({}, given).reshape(-1)[0])
    assert float(ours) == pytest.approx(theirs, rel=1e-9)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # qvr's own NUTS on the HMM is the long part
@pytest.mark.parametrize("name", sorted(reference.MODELS))
def test_numpyro_nuts_finds_qvrs_posterior_means(name: str) -> None:
    """NumPyro's NUTS (4 chains x (500 warmup + 500 draws), vectorized on the CPU) on
    the export agrees with qvr's NUTS within Monte Carlo error, site by site. Mixture
    and HMM labels are exchangeable and qvr's chains switch them: those compare
    label-invariant views (sorted components; the HMM's states in a canonical order).
    (Chains one after another, reading the one-chain sampler from JAX's cache, took
    longer in a fresh clone: 38 s for hierarchical_logistic, not 18.)"""
    namespace = load(exported(name))
    mcmc = MCMC(
        NUTS(namespace["model"]),
        num_warmup=reference.DRAWS,
        num_samples=reference.DRAWS,
        num_chains=4,
        chain_method="vectorized",
        progress_bar=False,
    )
    mcmc.run(jax.random.PRNGKey(0), **model_data(namespace, name))
    samples = mcmc.get_samples(group_by_chain=True)
    reference.assert_posterior_agrees(name, {k: np.asarray(v) for k, v in samples.items()})


# ---------------------------------------------------------------- the corpus


def test_every_corpus_program_exports_or_is_diagnosed() -> None:
    """quivers' own files and the examples: no exception; each program's export is
    Python that compiles, or each of its problems is a located QVR701 diagnostic."""

    def compiles(path: Path, program: str, text: str) -> None:
        compile(text, f"{path.name}:{program}", "exec")

    counts = reference.corpus_exports(NUMPYRO, compiles)
    assert counts["exported"] >= 80 and counts["diagnosed"] > 0, counts
