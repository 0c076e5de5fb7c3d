"""The Stan export (qvr_core/export/stan/): its text, where it refuses, and the six
example models run with PyStan 3 against qvr's own answers (tests/export/reference.py).

The Stan runs need PyStan and g++ and skip, saying so, without them. Each example is
compiled once for the module (a minute or more with g++; tests/export/stan_warm.py
compiles them in the background from the start of the session) and sampled once,
4 chains x (500 warmup + 500 draws), seed 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program, exportable_programs
from qvr_core.export.plan import Plan, make_plan
from qvr_core.export.stan import emit, unsupported
from tests.export import reference
from tests.export.stan_warm import build, unavailable

STAN = TARGETS["stan"]


def exported(name: str) -> str:
    text = export_program(reference.checked(name), STAN, reference.program(name)).text
    assert text is not None
    return text


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


# ---------------------------------------------------------------- the text


def test_eight_schools_declares_the_data_file_and_vectorises_the_sites() -> None:
    text = exported("eight_schools_noncentered")
    assert text.startswith("// Stan code for the QVR program `eight_schools`")
    got = lines(text)
    # the data block reads the JSON data file as it is, sizes as numbers (it comes first);
    # the plate is an int named after the object for the rest of the program
    for line in (
        "vector[8] sigma;  // over School",
        "vector[8] y;  // over School",
        "int School = 8;",
        "real mu;",
        "real<lower=0> tau;",
        "vector[School] theta_raw;",
        # returned: a transformed parameter, so the draws carry it
        "vector[School] theta = mu + tau * theta_raw;",
        "tau ~ cauchy(0.0, 5.0);",  # HalfCauchy(5): a Cauchy at 0 bounded below by 0
        "theta_raw ~ normal(0.0, 1.0);",
        "y ~ normal(theta, sigma);",
    ):
        assert line in got, line
    assert got.index("transformed parameters {") < got.index("model {")


def test_indices_read_from_zero_get_a_one_based_copy() -> None:
    got = lines(exported("hierarchical_logistic"))
    assert "array[120] int<lower=0, upper=5> county;  // over Obs" in got
    assert "array[Obs] int county_1;  // county, counted from 1 as Stan indexes" in got
    assert "for (i in 1:Obs) county_1[i] = county[i] + 1;" in got
    assert "vector[Obs] eta = alpha[county_1] + beta * x;" in got
    assert "y ~ bernoulli(p);" in got


def test_a_mixture_sums_each_point_over_its_components() -> None:
    got = lines(exported("gaussian_mixture"))
    assert "simplex[Component] weights;" in got
    assert "weights ~ dirichlet(rep_vector(2.0, Component));" in got
    start = got.index("for (n in 1:Point) {")
    assert got[start + 1 : start + 7] == [
        "vector[Component] lp_z;",
        "for (z in 1:Component) {",
        "lp_z[z] = categorical_lpmf(z | weights) + normal_lpdf(y[n] | mu[z], sigma[z]);",
        "}",
        "target += log_sum_exp(lp_z);",
        "}",
    ]


def test_the_hmm_nests_one_loop_per_state_inside_the_sequence_loop() -> None:
    got = lines(exported("hmm"))
    assert "array[State] simplex[Symbol] emit;" in got
    assert "array[Sequence] int o3_1;  // o3, counted from 1 as Stan indexes" in got
    start = got.index("for (n in 1:Sequence) {")
    nested = [line for line in got[start:] if line.startswith(("for (s", "lp_s", "target"))]
    assert nested[:3] == [
        "for (s0 in 1:State) {",
        "lp_s0[s0] = categorical_lpmf(s0 | start) + categorical_lpmf(o0_1[n] | emit[s0]);",
        "for (s1 in 1:State) {",
    ]
    assert "lp_s2[s2] += log_sum_exp(lp_s3);" in nested
    assert nested[-1] == "target += log_sum_exp(lp_s0);"


VIA = """\
object Group : FinSet 3
object Row : FinSet 12
object K : FinSet 2

program grouped : Row -> Row
    sample w <- Dirichlet(1.5) [over=K]
    sample m : K <- Normal(0.0, 3.0)
    sample p <- Beta(2.0, 2.0)
    sample flip <- Bernoulli(p)
    marginalize c : K <- Categorical(w) [over=Group]
        observe y : Row <- Normal(m[c], 1.0) [via=grp]
    let shift = 2.0 * flip - 1.0
    observe u : Row <- Normal(shift, 1.0)
    return w

export grouped
"""


def plan_of(source: str) -> Plan:
    module = check(source)
    assert module.ok, module.errors
    made = make_plan(module, exportable_programs(module)[0], "test.qvr")
    assert isinstance(made, Plan), made
    return made


def test_a_via_map_adds_each_row_to_its_group_and_a_discrete_sample_is_summed() -> None:
    got = lines(emit(plan_of(VIA)))
    # the rows of each group, found once in transformed data
    assert "array[Row] int grp_rows = sort_indices_asc(grp);" in got
    assert "for (i in 1:Row) grp_start[grp_1[i] + 1] += 1;" in got
    loop = got.index("for (j in grp_start[n]:(grp_start[n + 1] - 1)) {")
    assert got[loop + 1 : loop + 3] == [
        "int r = grp_rows[j];",
        "lp_c[c] += normal_lpdf(y[r] | m[c], 1.0);",
    ]
    # `flip` is a discrete latent: summed out (qvr's NUTS does the same), its reader moved in
    assert "for (flip in 0:1) {" in got
    assert "lp_flip[flip + 1] = bernoulli_lpmf(flip | p) + normal_lpdf(u | shift, 1.0);" in got


ODD = """\
object Row : FinSet 10

program odd : Row -> Row
    sample s <- HalfNormal(1.0)
    let m = sign(s) * 2.0
    let r = s % 2.0
    observe y : Row <- Kumaraswamy(2.0, s)
    return m

export odd
"""


def test_what_stan_lacks_is_refused_where_it_is_written() -> None:
    found = {
        (u.span.start_line + 1, u.span.start_col + 1, u.message) for u in unsupported(plan_of(ODD))
    }
    assert found == {
        (5, 13, "`sign`: Stan has no function of the same meaning"),
        (6, 13, "`%` (a remainder of reals with the divisor's sign); Stan has none"),
        (7, 5, "Kumaraswamy: Stan has no distribution of the same density"),
    }
    # and the export writes nothing, saying the same through the QVR701 diagnostics
    module = check(ODD)
    out = export_program(module, STAN, "odd")
    assert out.text is None
    assert {d.code for d in out.diagnostics} == {"QVR701"}


RESERVED = """\
object Row : FinSet 4

program reserved : Row -> Row
    sample offset <- Normal(0.0, 1.0)
    let target = offset * 2.0
    observe y : Row <- Normal(target, 1.0)
    return target

export reserved
"""


def test_names_stan_reserves_are_renamed_but_a_data_name_must_stay() -> None:
    got = lines(emit(plan_of(RESERVED)))
    assert "real offset_;" in got
    assert "real target_ = offset_ * 2.0;" in got
    assert "y ~ normal(target_, 1.0);" in got
    # a data name is the data file's key: the export cannot rename it
    renamed = RESERVED.replace("observe y", "observe lower")
    (problem,) = unsupported(plan_of(renamed))
    assert (
        problem.message
        == "the data name `lower` is a word Stan reserves; rename it in the data too"
    )
    assert (problem.span.start_line + 1, problem.span.start_col + 1) == (6, 13)


# ---------------------------------------------------------------- the corpus


def test_every_corpus_program_is_exported_or_refused_with_a_place() -> None:
    """quivers' own files and the examples: no exception; each export passes Stan's own
    front end (stanc, where PyStan is here), or its problems are located QVR701s."""
    stanc = _stanc()
    failures = []

    def parses(path: Path, program: str, text: str) -> None:
        error = stanc(text) if stanc is not None else None
        if error:
            failures.append(f"{path.name} {program}: {error}")

    counts = reference.corpus_exports(STAN, parses)
    assert counts["exported"] >= 50, counts
    assert not failures, "\n".join(failures)


def _stanc() -> Callable[[str], str | None] | None:
    """Stan's own compiler front end (stanc, in httpstan; no C++), when installed: what it
    says of a program it refuses, None for one it accepts."""
    try:
        import httpstan.compile
    except Exception:
        return None

    def run(code: str) -> str | None:
        try:
            httpstan.compile.compile(code, "qvr_export")
        except ValueError as e:
            return str(e)[:2000]
        return None

    return run


# ---------------------------------------------------------------- run with Stan

needs_stan = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
#: a compile (a minute or more with g++, more on a busy machine) and qvr's own NUTS run
#: (reference.qvr_posterior, shared with the other targets' tests) in one test's setup
slow = pytest.mark.timeout(1500)


@dataclasses.dataclass(frozen=True)
class StanRun:
    name: str
    model: Any  # stan.model.Model
    fit: Any  # stan.fit.Fit

    def draws(self, site: str) -> np.ndarray:
        """A site's draws as qvr keeps them: (chains, draws, *site shape)."""
        flat = np.asarray(self.fit[site])  # (*dims, draws * chains), draw by draw
        dims = tuple(self.fit.dims[self.fit.param_names.index(site)])
        out = flat.reshape(*dims, self.fit.num_samples, self.fit.num_chains)
        return np.moveaxis(out, (-1, -2), (0, 1))


@pytest.fixture(scope="module", params=list(reference.MODELS))
def stan_run(request: pytest.FixtureRequest) -> Iterator[StanRun]:
    name = request.param
    model = build(exported(name), reference.data(name), random_seed=1)
    fit = model.sample(num_chains=4, num_samples=reference.DRAWS, num_warmup=reference.DRAWS)
    yield StanRun(name, model, fit)


def latent(name: str) -> list[str]:
    model = reference.checked(name).models[reference.program(name)]
    return [s.name for s in model.sites if s.kind == "sample"]


@needs_stan
@slow
def test_stan_posterior_means_agree_with_qvrs_nuts(stan_run: StanRun) -> None:
    name = stan_run.name
    reference.assert_posterior_agrees(name, {s: stan_run.draws(s) for s in latent(name)})


@needs_stan
@slow
def test_stan_log_density_matches_qvrs_log_joint(stan_run: StanRun) -> None:
    """Stan's `~` drops every constant term of a density (`-log(2 pi) / 2`, the log 2 of a
    half family, the terms of data alone), so its log density and qvr's (every
    constant kept) differ by a constant: the same at every point. Compared at qvr's
    fixed point and a second point moved off it in Stan's unconstrained space, the
    differences agree to rounding, which pins every term that depends on a parameter,
    the summed-out scopes included. No Jacobian: both in the constrained space."""
    name, model = stan_run.name, stan_run.model
    first = reference.fixed_point(name)
    u1 = list(model.unconstrain_pars({k: v.tolist() for k, v in first.items()}))
    u2 = [u + 0.3 * (i % 3 - 1) + 0.1 for i, u in enumerate(u1)]
    second = _constrained(model, u2, list(first))
    stan_diff = model.log_prob(u1, adjust_transform=False) - model.log_prob(
        u2, adjust_transform=False
    )
    qvr_diff = reference.qvr_log_joint(name, first) - reference.qvr_log_joint(name, second)
    assert abs(qvr_diff) > 1e-3  # the two points differ
    assert stan_diff == pytest.approx(qvr_diff, rel=1e-9, abs=1e-8)


def _constrained(model: Any, unconstrained: list[float], sites: list[str]) -> dict[str, np.ndarray]:
    """The parameters at an unconstrained point, by site, shaped as qvr shapes them
    (Stan flattens each column-major)."""
    flat = model.constrain_pars(unconstrained, include_tparams=False, include_gqs=False)
    out: dict[str, np.ndarray] = {}
    at = 0
    for name, dims in zip(model.param_names, model.dims, strict=True):
        if name not in sites:
            continue
        n = int(np.prod(dims)) if dims else 1
        out[name] = np.asarray(flat[at : at + n], dtype=float).reshape(dims, order="F")
        at += n
    assert set(out) == set(sites)
    return out


@needs_stan
def test_builds_keep_httpstans_compiler_flags_less_the_debugging_information(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`build` compiles each program with httpstan's own flags and `-g0` (a third of a
    build's time is the debugging information of Stan's templates): every flag httpstan
    passes is kept, and the builder PyStan's in-process server looks up gets them."""
    import asyncio
    import inspect

    import httpstan.models

    from tests.export import stan_warm

    # the module's text: the function itself may be this process's wrapper already
    source = inspect.getsource(httpstan.models).split("def build_services_extension_module")[1]
    for flag in stan_warm.COMPILE_ARGS[:-1]:
        assert f'"{flag}"' in source, flag
    assert stan_warm.COMPILE_ARGS[-1] == "-g0"
    seen: list[tuple[str, list[str] | None]] = []

    async def builder(program_code: str, extra_compile_args: list[str] | None = None) -> str:
        seen.append((program_code, extra_compile_args))
        return "built"

    monkeypatch.setattr(httpstan.models, "build_services_extension_module", builder)
    stan_warm._without_debug_information()
    stan_warm._without_debug_information()  # once is enough: a second call wraps nothing
    patched = httpstan.models.build_services_extension_module
    assert asyncio.run(patched("model {}")) == "built"
    assert asyncio.run(patched("model {}", ["-O0"])) == "built"  # a caller's own flags win
    assert seen == [("model {}", stan_warm.COMPILE_ARGS), ("model {}", ["-O0"])]


def test_the_exports_the_stan_tests_build_are_the_background_builds() -> None:
    """The background compiles (stan_warm) build exactly what these tests build, or the
    cache they fill would not be found."""
    from tests.export.stan_warm import programs

    assert programs() == {name: exported(name) for name in reference.MODELS}
