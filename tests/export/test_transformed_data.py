"""Regressions written as Stan writes them, exported: literal indices and observed
transformed data (posteriordb's earnings-logearn_interaction, in small).

Stan counts from 1 (`beta[1]` is QVR's `beta[0]`) and computes a let of the data in
`transformed data`; NumPyro's `load_data` computes it before the model, which observes
it as a keyword (None draws it); PyMC computes it from its `pm.Data`. The text is
checked here; the tests marked slow run each target and compare its log density with
qvr's log joint at a fixed point (constants kept; Stan's `~` drops them, so Stan is
compared by differences between two points, as tests/export/test_stan.py does).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, export_program
from qvr_core.runs.model_data import split_data
from qvr_core.runtime.model import compile_model
from tests.export.pymc_points import value_point
from tests.models import regressions

EARNINGS = regressions.earnings_interaction(6)

DATA: dict[str, list[float]] = {
    "earn": [50000, 60000, 30000, 50000, 51000, 9000],
    "height": [74, 66, 64, 63, 63, 64],
    "male": [1, 0, 0, 0, 0, 1],
}
POINT = {"beta": np.array([8.0, 0.02, -0.1, 0.01, 0.3]), "sigma": np.array(0.9)}


def _checked(source: str = EARNINGS) -> CheckedModule:
    module = check(source)
    assert module.ok, module.errors
    return module


def _exported(target: str, source: str = EARNINGS, program: str = "earnings") -> str:
    result = export_program(_checked(source), TARGETS[target], program, source="earnings.qvr")
    assert result.text is not None, result.diagnostics
    return result.text


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def _qvr_log_joint(
    point: dict[str, np.ndarray],
    source: str = EARNINGS,
    name: str = "earnings",
    given: dict[str, list[float]] | None = None,
) -> float:
    """qvr's log joint at `point`, the data read as `qvr run` reads them (every constant
    kept, in the constrained space)."""
    program = compile_model(_checked(source), name)
    data = {k: torch.tensor(v) for k, v in (DATA if given is None else given).items()}
    x, observed = split_data(program, data, "data.json")
    values = {k: torch.as_tensor(v, dtype=torch.float64) for k, v in point.items()}
    with torch.no_grad():
        return float(program.log_joint(x, {**values, **observed})[0])


# ---------------------------------------------------------------- the text


def test_stan_counts_from_one_and_computes_the_observed_let_in_transformed_data() -> None:
    got = _lines(_exported("stan"))
    data = got[got.index("data {") : got.index("transformed data {")]
    assert "vector[6] earn;  // over Row" in data
    assert not any("log_earn" in line for line in data)  # computed, not read
    tdata = got[got.index("transformed data {") : got.index("parameters {")]
    assert "vector[Row] log_earn = log(earn);" in tdata
    assert "vector[Row] inter = height .* male;" in tdata
    # a comparison of vectors, which Stan writes of numbers only: entry by entry
    assert tdata[tdata.index("vector[Row] tall;") + 1] == (
        "for (i in 1:Row) tall[i] = height[i] > 65.0;"
    )
    mu = "beta[1] + beta[2] * height + beta[3] * male + beta[4] * inter + beta[5] * tall"
    assert f"vector[Row] mu = {mu};" in got
    assert "log_earn ~ normal(mu, sigma);" in got


def test_numpyro_computes_it_in_load_data_and_observes_a_keyword() -> None:
    text = _exported("numpyro")
    assert "def model(earn, height, male, log_earn=None):" in text
    got = _lines(text)
    assert 'data["log_earn"] = jnp.log(data["earn"])' in got
    assert "return data" in got
    assert 'numpyro.sample("log_earn", dist.Normal(mu, sigma), obs=log_earn)' in got
    mu = "beta[0] + beta[1] * height + beta[2] * male + beta[3] * inter + beta[4] * tall"
    assert f'mu = numpyro.deterministic("mu", {mu})' in got
    assert "log_earn = jnp.log(earn)" not in got  # the model reads the keyword


def test_pymc_observes_the_let_computed_from_its_data() -> None:
    got = _lines(_exported("pymc"))
    assert "log_earn = pt.log(earn)" in got
    assert 'pm.Normal("log_earn", mu=mu, sigma=sigma, observed=log_earn, dims="Row")' in got
    assert not any('pm.Data("log_earn"' in line for line in got)


ENTRIES = """\
object One : FinSet 1
object Group : FinSet 3
object Coef : FinSet 2
object K : FinSet 4

program p : Group -> Group
    sample a : One <- Normal(0.0, 1.0)
    sample theta : Group * Coef <- Normal(0.0, 1.0)
    sample w : K <- Dirichlet(1.0)
    let first = theta[0]
    let corner = theta[2, 1]
    let m = first[1] + corner + w[1] + a[0]
    observe y : Group <- Normal(m, 1.0)
    return m

export p
"""
ENTRIES_DATA = {"y": [0.5, -1.0, 2.0]}
ENTRIES_POINT = {
    "a": np.array(0.3),
    "theta": np.array([[0.1, -0.4], [1.2, 0.7], [-0.5, 0.9]]),
    "w": np.array([0.1, 0.2, 0.3, 0.4]),
}


def test_entries_of_plates_and_draws_are_indexed_in_each_target() -> None:
    stan = _lines(_exported("stan", ENTRIES, "p"))
    assert "row_vector[Coef] first = theta[1];" in stan
    assert "real corner = theta[3, 2];" in stan
    assert "real m = first[2] + corner + w[2] + a[1];" in stan  # `a` is a vector[One]
    numpyro = _lines(_exported("numpyro", ENTRIES, "p"))
    assert "first = theta[0]" in numpyro and "corner = theta[2, 1]" in numpyro
    # a one-entry plate has no axis in qvr, nor in NumPyro: its one entry is the value
    assert 'm = numpyro.deterministic("m", first[1] + corner + w[1] + a)' in numpyro
    pymc = _lines(_exported("pymc", ENTRIES, "p"))
    assert 'first = pm.Deterministic("first", theta[0], dims="Coef")' in pymc


def _unsupported(target: str, source: str, program: str = "p") -> list[tuple[str, str, int]]:
    result = export_program(_checked(source), TARGETS[target], program)
    assert result.text is None
    return [(d.code, d.message, d.span.start_line + 1) for d in result.diagnostics]


COUNTS = """\
object Row : FinSet 4

program p : Row -> Row
    sample rate <- Gamma(2.0, 1.0)
    let k = n - 1
    observe k : Row <- Poisson(rate)
    return rate

export p
"""


def test_stan_refuses_an_observed_let_of_whole_numbers_at_its_step() -> None:
    ((code, message, line),) = _unsupported("stan", COUNTS)
    assert (code, line) == ("QVR701", 6)
    assert "`k` is a let of the data, which Stan computes as reals" in message


READ_BEFORE = """\
object Row : FinSet 4

program p : Row -> Row
    sample mu <- Normal(0.0, 1.0)
    let y = log(earn)
    let twice = y * 2.0
    observe y : Row <- Normal(mu, 1.0)
    observe z : Row <- Normal(twice, 1.0)
    return mu

export p
"""


def test_numpyro_refuses_a_read_of_the_observed_let_before_its_observe() -> None:
    ((code, message, line),) = _unsupported("numpyro", READ_BEFORE)
    assert (code, line) == ("QVR701", 6)
    assert "reads `y` before its observe" in message


# ---------------------------------------------------------------- the targets run


def _data_file(tmp_path: Path) -> Path:
    path = tmp_path / "earnings.json"
    path.write_text(json.dumps(DATA), encoding="utf-8")
    return path


def _namespace(text: str, name: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": name}
    exec(compile(text, f"<{name}>", "exec"), namespace)
    return namespace


@pytest.mark.slow
def test_numpyro_scores_as_qvr_and_draws_the_observed_let_when_none(tmp_path: Path) -> None:
    pytest.importorskip("numpyro")
    import jax
    import jax.numpy as jnp
    from numpyro.infer import Predictive
    from numpyro.infer.util import log_density

    before = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", True)
    try:
        namespace = _namespace(_exported("numpyro"), "numpyro_export")
        kwargs = namespace["load_data"](str(_data_file(tmp_path)))
        np.testing.assert_allclose(np.asarray(kwargs["log_earn"]), np.log(DATA["earn"]))
        point = {k: jnp.asarray(v) for k, v in POINT.items()}
        ours, _ = log_density(namespace["model"], (), kwargs, point)
        assert float(ours) == pytest.approx(_qvr_log_joint(POINT), rel=1e-9)
        given = {k: v for k, v in kwargs.items() if k != "log_earn"}
        drawn = Predictive(namespace["model"], num_samples=3)(jax.random.PRNGKey(0), **given)
        assert drawn["log_earn"].shape == (3, 6)
        entries = _namespace(_exported("numpyro", ENTRIES, "p"), "numpyro_entries")
        data = {k: jnp.asarray(v) for k, v in ENTRIES_DATA.items()}
        point = {k: jnp.asarray(v) for k, v in ENTRIES_POINT.items()}
        ours, _ = log_density(entries["model"], (), data, point)
        theirs = _qvr_log_joint(ENTRIES_POINT, ENTRIES, "p", ENTRIES_DATA)
        assert float(ours) == pytest.approx(theirs, rel=1e-9)
    finally:
        jax.config.update("jax_enable_x64", before)


@pytest.mark.slow
def test_pymc_scores_as_qvr() -> None:
    pytest.importorskip("pymc")
    import pytensor

    namespace = _namespace(_exported("pymc"), "pymc_export")
    model = namespace["build_model"](**DATA)
    mode = pytensor.compile.mode.Mode(linker="py", optimizer="fast_run")
    logp = model.compile_logp(jacobian=False, mode=mode)
    values = {"beta": POINT["beta"], "sigma_log__": np.log(POINT["sigma"])}
    assert float(logp(values)) == pytest.approx(_qvr_log_joint(POINT), rel=1e-6)  # as test_pymc
    entries = _namespace(_exported("pymc", ENTRIES, "p"), "pymc_entries")["build_model"](
        **ENTRIES_DATA
    )
    logp = entries.compile_logp(jacobian=False, mode=mode)
    ours = float(logp(value_point(entries, ENTRIES_POINT)))
    theirs = _qvr_log_joint(ENTRIES_POINT, ENTRIES, "p", ENTRIES_DATA)
    assert ours == pytest.approx(theirs, rel=1e-6)


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a compile with g++: a minute or more on two cores
def test_stan_scores_as_qvr_up_to_its_constant() -> None:
    """The program is tests/export/stan_shared.py's, which holds this regression (its
    literal indices, its observed let of the data in `transformed data`) beside
    test_flat_exports' (one g++ compile for both tests): only the latents of this one move
    between the two points, the others cancel in the difference."""
    from tests.export import stan_shared
    from tests.export.stan_warm import unavailable

    if unavailable() is not None:
        pytest.skip(str(unavailable()))
    got = _lines(stan_shared.exported())
    assert "vector[Row] log_earn = log(earn);" in got  # computed in Stan, not read
    assert "log_earn ~ normal(mu, sigma);" in got
    model = stan_shared.stan_model()
    shift = np.array([0.3, -0.01, 0.2, 0.005, -0.4])
    first = {**stan_shared.POINT, "beta": POINT["beta"], "sigma": POINT["sigma"]}
    second = {**first, "beta": POINT["beta"] + shift, "sigma": np.array(1.3)}
    u1, u2 = (stan_shared.unconstrained(model, p) for p in (first, second))
    stan = model.log_prob(u1, adjust_transform=False) - model.log_prob(u2, adjust_transform=False)
    qvr = stan_shared.qvr_log_joint(first) - stan_shared.qvr_log_joint(second)
    assert abs(qvr) > 1e-3
    assert stan == pytest.approx(qvr, rel=1e-9, abs=1e-8)
