"""qvr's one-click NUTS against Stan and nutpie on posteriordb's posteriors (issue 47).

    .venv/bin/python bench/posteriordb.py [--models NAME,NAME] [--draws 1000] [--warmup 1000]
        [--chains 4] [--seed 1] [--peers stan,nutpie] [--posteriordb DIR]
        [--stan-rebuild] [--json OUT.json]

The posteriors are posteriordb's (stan-dev/posteriordb), copied with their data and
reference posteriors to `--posteriordb` (default `../shared/posteriordb` from the repository
root: `<name>/{model.stan,data.json,reference.json}`; its README.md says how the references
were drawn). Every posterior that QVR can express today is written, as a user would write
it, in `examples/posteriordb/<name>.qvr`; `NOT_EXPRESSIBLE` below says why each other one is
not (the input of issue 49), and the bench prints that list at the end.

Each model is fitted by:

1. qvr: its default one-click NUTS, the code path of `qvr run FILE --data DATA --method
   nuts` (`qvr_core.runs.run.run_program`, called in this process, torch and qvr already
   imported): `--chains` chains of `--warmup + --draws` iterations, which the run splits in
   halves (warmup, then draws) as `qvr run --steps` does; default mass matrix, maximum tree
   depth 10. "click" is the whole call (check, data read, compile, sampling, the summary);
   "sampling" is the run's own `seconds` (the chains, warmup included).
2. Stan through PyStan 3 on posteriordb's own `model.stan` and `data.json`: "compile" is
   `stan.build` as measured in this run (httpstan caches builds by the program's text: a
   cached build is marked so; `--stan-rebuild` appends a fresh comment to the program, as an
   edit would, so it compiles), "sampling" is `sample` alone (fits httpstan cached for the
   same seed are deleted first, so it samples), "click" is both. httpstan runs the chains in
   processes of their own, side by side; qvr advances its chains together in one process.
   Each `--stan-rebuild` leaves one more build in httpstan's cache.
3. nutpie on qvr's PyMC export of the same `.qvr` file (`qvr_core.export`), when nutpie and
   PyMC are importable, else skipped with the reason: "compile" is the export, PyMC's model
   and `nutpie.compile_pymc_model`, "sampling" is `nutpie.sample`. nutpie comes with the
   `bench` extra (`pip install -c constraints.txt -e ".[bench]"`). A sampler that fails on a
   posterior is printed as one line and the others go on.

Every sampler's draws go through the same ArviZ calls (`az.ess` bulk, `az.rhat`) over the
parameters of the reference, in posteriordb's (Stan's) names. Printed per model and
sampler: converged (max R-hat <= 1.01), whether the fit matches the reference by
posteriordb's rule (its README.md: for every parameter |mean - ref mean| <= 0.1 ref sd + 3
MCSE, MCSE = sd / sqrt(bulk ESS), and 0.8 <= sd / ref sd <= 1.25, with R-hat <= 1.01; the
worst parameter is named when it does not), min bulk ESS, ESS per second of the whole
click and of sampling alone, divergences (after warmup), and qvr's ESS per second as
ratios of each peer's.

QVR reads the data by the names its program uses and ignores the others, so every model
reads posteriordb's data.json as it is: what a Stan program computes from its data (a
log, a centred design matrix without its intercept column, lagged values), its QVR
program computes too (`Spec.data` stays for a model that would need a mapping). Each has
one from qvr's draws to posteriordb's parameters (`Spec.draws`): QVR keeps the sampled
sites in the draws, not `let` values, so a transformed parameter of the Stan program
(eight schools' theta) is computed from the draws here as Stan's `transformed
parameters` compute it; the HMM's transition matrix is split into Stan's two simplexes.
What each mapping does is written beside it; the shared files are never changed.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qvr_core.plan.run_arguments import ENGINES

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "posteriordb"
DEFAULT_DB = ROOT.parent / "shared" / "posteriordb"
PEERS = ("stan", "nutpie")
R_HAT = 1.01  # converged: every reference parameter's R-hat at most this

Draws = dict[str, np.ndarray]  # a variable's draws, shaped (chain, draw, *shape)


# --- qvr's data and draws, per model ---------------------------------------------------


def _as_is(data: dict[str, Any]) -> dict[str, Any]:
    """posteriordb's data.json unchanged: the program reads its keys by Stan's names and
    ignores the others (the sizes `N`, `J`, which its objects carry)."""
    return data


def _same(draws: Draws, data: dict[str, Any]) -> Draws:
    return draws


def _eight_schools_draws(draws: Draws, data: dict[str, Any]) -> Draws:
    """Stan's transformed parameter theta = theta_trans * tau + mu."""
    mu, tau = draws["mu"], draws["tau"]
    theta = draws["theta_trans"] * tau[..., None] + mu[..., None]
    return {"mu": mu, "tau": tau, "theta": theta}


def _gauss_mix_draws(draws: Draws, data: dict[str, Any]) -> Draws:
    """The ordered means mu (the program's `[constraint=ordered]` latent, Stan's own) and
    theta, the first component's weight (Beta(5, 5) as the first entry of a Dirichlet(5,
    5))."""
    return {
        "mu": draws["mu"],
        "sigma": draws["sigma"],
        "theta": draws["weights"][..., 0],
    }


def _gp_draws(draws: Draws, data: dict[str, Any]) -> Draws:
    """Stan's transformed parameter f = L_cov * f_tilde, L_cov the Cholesky factor of the
    exponentiated quadratic covariance of the points x (with its 1e-10 jitter)."""
    x = np.asarray(data["x"], dtype=float)
    alpha, rho = draws["alpha"][..., None, None], draws["rho"][..., None, None]
    cov = alpha**2 * np.exp(-0.5 * ((x[:, None] - x[None, :]) / rho) ** 2)
    lower = np.linalg.cholesky(cov + 1e-10 * np.eye(len(x)))
    f = (lower @ draws["f_tilde"][..., None])[..., 0]
    return {"rho": draws["rho"], "alpha": draws["alpha"], "f": f}


def _hmm_draws(draws: Draws, data: dict[str, Any]) -> Draws:
    """Stan's two simplex parameters theta1 and theta2 are the rows of QVR's transition
    matrix theta (row j: where state j goes)."""
    return {
        "theta1": draws["theta"][..., 0, :],
        "theta2": draws["theta"][..., 1, :],
        "mu": draws["mu"],
    }


@dataclass(frozen=True)
class Spec:
    """How one posterior's data reach its QVR program and its draws reach the reference."""

    data: Callable[[dict[str, Any]], dict[str, Any]]
    #: the reference's parameters from a fit's draws and the program's data
    draws: Callable[[Draws, dict[str, Any]], Draws] = _same


EXPRESSIBLE: dict[str, Spec] = {
    "eight_schools-eight_schools_noncentered": Spec(_as_is, _eight_schools_draws),
    "sblrc-blr": Spec(_as_is),
    "arK-arK": Spec(_as_is),
    "low_dim_gauss_mix-low_dim_gauss_mix": Spec(_as_is, _gauss_mix_draws),
    "diamonds-diamonds": Spec(_as_is),
    # flat (improper) priors, `Flat` and `HalfFlat` (issue 49)
    "kidiq-kidscore_momiq": Spec(_as_is),
    "earnings-earn_height": Spec(_as_is),
    "kilpisjarvi_mod-kilpisjarvi": Spec(_as_is),
    # and transformed data: logs, products and indicators computed from the data
    "kidiq_with_mom_work-kidscore_mom_work": Spec(_as_is),
    "earnings-logearn_interaction": Spec(_as_is),
    "mesquite-logmesquite": Spec(_as_is),
    "nes1972-nes": Spec(_as_is),
    # a Gaussian process's covariance, its Cholesky factor and a matrix product (issue 49)
    "gp_pois_regr-gp_pois_regr": Spec(_as_is, _gp_draws),
    # a variance carried over time (`lag`, `linear_recurrence`) and a flat prior between
    # bounds that move with another parameter (`BoundedFlat`) (issue 49)
    "garch-garch11": Spec(_as_is),
    # a hidden Markov chain summed out by the forward algorithm (`MarkovChain`) and
    # positive ordered means (`[constraint=positive_ordered]`) (issue 49)
    "hmm_example-hmm_example": Spec(_as_is, _hmm_draws),
    # an ODE whose right-hand side is a define, solved by `ode_rk45_tol` (issue 49); its
    # sites are Stan's parameters, named so
    "hudson_lynx_hare-lotka_volterra": Spec(_as_is),
}

#: Why a posterior of the shared set has no QVR program (none now: the last, the ODE of
#: hudson_lynx_hare-lotka_volterra, is written with `ode_rk45_tol`).
NOT_EXPRESSIBLE: dict[str, str] = {}


# --- the reference and the rule --------------------------------------------------------


def reference(db: Path, name: str) -> dict[str, dict[str, float]]:
    """posteriordb's reference: per parameter (Stan's names, `b[3]`) mean, sd, q05..."""
    return json.loads((db / name / "reference.json").read_text(encoding="utf-8"))["parameters"]


_NAME = re.compile(r"(\w+)(?:\[([\d,\s]+)\])?")


def by_parameter(draws: Draws, names: list[str]) -> dict[str, np.ndarray]:
    """Each reference parameter's draws (chain, draw): `b[3]` is `b[..., 2]`."""
    out = {}
    for name in names:
        m = _NAME.fullmatch(name)
        if m is None or m.group(1) not in draws:
            raise KeyError(f"no draws of {name} (have {', '.join(sorted(draws))})")
        value = np.asarray(draws[m.group(1)], dtype=float)
        index = tuple(int(i) - 1 for i in m.group(2).split(",")) if m.group(2) else ()
        if value.ndim != 2 + len(index):
            raise KeyError(f"{name}: draws of {m.group(1)} have shape {value.shape}")
        out[name] = value[(slice(None), slice(None), *index)]
    return out


@dataclass
class Fit:
    """One sampler's fit of one posterior, measured alike for all."""

    tool: str
    click: float  # seconds of the whole click: check/compile + sampling
    sampling: float  # seconds of the sampler alone, warmup included
    compile: float  # click - sampling for qvr; the build (or export + compile) for peers
    divergences: int
    ess: float = math.nan  # min bulk ESS over the reference parameters
    r_hat: float = math.nan  # max R-hat over them
    worst: str = ""  # the parameter furthest outside the rule, with why
    matches: bool = False
    note: str = ""  # "cached build", the split of qvr's iterations, ...
    per_parameter: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def converged(self) -> bool:
        return self.r_hat <= R_HAT

    def per_second(self, seconds: float) -> float:
        return self.ess / seconds if seconds > 0 else math.nan


def measure(fit: Fit, draws: dict[str, np.ndarray], ref: dict[str, dict[str, float]]) -> Fit:
    """ESS, R-hat and the match against the reference by posteriordb's rule (ArviZ)."""
    import arviz as az

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = az.from_dict(posterior=draws)
        ess = az.ess(data, method="bulk")
        rhat = az.rhat(data)
    failures: list[tuple[float, str]] = []
    for name, value in draws.items():
        mean, sd = float(value.mean()), float(value.std(ddof=1))
        e, r = float(ess[name]), float(rhat[name])
        mcse = sd / math.sqrt(e) if e > 0 else math.inf
        r_mean, r_sd = ref[name]["mean"], ref[name]["sd"]
        allowed = 0.1 * r_sd + 3 * mcse
        ratio = sd / r_sd if r_sd > 0 else math.inf
        fit.per_parameter[name] = {"mean": mean, "sd": sd, "ess_bulk": e, "r_hat": r}
        off = abs(mean - r_mean) / allowed if allowed > 0 else math.inf
        if off > 1:
            failures.append(
                (off, f"{name} mean {mean:.4g} vs {r_mean:.4g} (allowed +-{allowed:.2g})")
            )
        if not 0.8 <= ratio <= 1.25:
            spread = max(ratio / 1.25, 0.8 / ratio) if ratio > 0 else math.inf
            failures.append((spread, f"{name} sd {sd:.4g} vs {r_sd:.4g} (ratio {ratio:.2f})"))
        if not r <= R_HAT:
            failures.append((r / R_HAT, f"{name} R-hat {r:.3f}"))
    fit.ess = min(float(ess[k]) for k in draws)
    fit.r_hat = max(float(rhat[k]) for k in draws)
    fit.matches = not failures
    fit.worst = max(failures)[1] if failures else ""
    return fit


# --- the samplers ----------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    draws: int
    warmup: int
    chains: int
    seed: int
    stan_rebuild: bool
    engine: str = "auto"  # what samples qvr's run (`qvr run --engine`)


def run_qvr(
    name: str, data_path: Path, qvr_data: dict[str, Any], spec: Spec, names: list[str], s: Settings
) -> tuple:
    """`qvr run MODEL --data DATA --method nuts` in this process, timed; the draws by
    reference parameter."""
    from qvr_core.inference.results import RunResults
    from qvr_core.runs.run import run_program

    path = MODELS / f"{name}.qvr"
    steps = s.warmup + s.draws
    results = RunResults()
    began = time.perf_counter()
    source = path.read_text(encoding="utf-8")
    summary = run_program(
        source,
        path=str(path),
        data=str(data_path),
        method="nuts",
        steps=steps,
        chains=s.chains,
        seed=s.seed,
        results=results,
        engine=s.engine,
    )
    click = time.perf_counter() - began
    assert summary.nuts is not None
    notes = []
    if s.warmup != s.draws:
        notes.append(f"{steps} iterations split {steps // 2} warmup + {steps - steps // 2} draws")
    if summary.nuts.processes > 1:  # chains in processes (`inference.chains`)
        notes.append(f"chains in {summary.nuts.processes} processes")
    note = "; ".join(notes)
    draws = spec.draws(dict(results.groups["posterior"]), qvr_data)
    fit = Fit(
        "qvr",
        click,
        summary.seconds,
        click - summary.seconds,
        summary.nuts.divergences,
        note=note,
    )
    return fit, by_parameter(draws, names)


def run_stan(name: str, db: Path, names: list[str], s: Settings) -> tuple:
    """posteriordb's Stan program through PyStan 3: build, then sample, timed apart."""
    import httpstan.cache
    import httpstan.models
    import stan

    code = (db / name / "model.stan").read_text(encoding="utf-8")
    if s.stan_rebuild:  # httpstan caches a build by the program's text: an edit rebuilds
        code += f"\n// posteriordb bench {time.time_ns()}\n"
    data = json.loads((db / name / "data.json").read_text(encoding="utf-8"))
    model_dir = httpstan.cache.model_directory(httpstan.models.calculate_model_name(code))
    cached = model_dir.exists()
    began = time.perf_counter()
    posterior = stan.build(code, data=data, random_seed=s.seed)
    built = time.perf_counter() - began
    # httpstan keeps every fit under its model's `fits/` and answers the same request from
    # it without sampling: those are deleted, so the time is a sampling's
    for old in model_dir.glob("fits/*.jsonlines.gz"):
        old.unlink(missing_ok=True)
    began = time.perf_counter()
    fit = posterior.sample(
        num_chains=s.chains, num_warmup=s.warmup, num_samples=s.draws, max_depth=10
    )
    sampling = time.perf_counter() - began

    shapes = dict(zip(fit.param_names, fit.dims, strict=True))

    stems = {m.group(1) for n in names if (m := _NAME.fullmatch(n))}
    draws = {v: stan_by_chain(np.asarray(fit[v]), shapes[v], s.chains) for v in stems}
    divergences = int(np.asarray(fit["divergent__"]).sum())
    note = "cached build" if cached else "compiled"
    out = Fit("stan", built + sampling, sampling, built, divergences, note=note)
    return out, by_parameter(draws, names)


def stan_by_chain(a: np.ndarray, shape: Sequence[int], chains: int) -> np.ndarray:
    """PyStan 3's draws of one variable, `(*shape, draws * chains)` (a scalar: `(1, n)`),
    as `(chains, draws, *shape)`. PyStan lays the draws out draw after draw, the chains
    interleaved (its `stepsize__`, one value per chain, cycles through the chains); read
    chain after chain, each "chain" mixes all four, and ESS and R-hat come out as if
    every draw were independent (gp_pois_regr's alpha: bulk ESS 3,937 where it is 1,272)."""
    a = a.reshape(*shape, -1, chains)
    return np.moveaxis(np.moveaxis(a, -1, 0), -1, 1)


def nutpie_missing() -> str | None:
    """Why nutpie cannot run here, or None."""
    hint = 'pip install -c constraints.txt -e ".[bench]"'
    for module in ("nutpie", "pymc"):
        try:
            __import__(module)
        except ImportError as e:
            return f"{module} is not importable ({e}; {hint})"
    return None


def run_nutpie(name: str, qvr_data: dict[str, Any], spec: Spec, names: list[str], s: Settings):
    """nutpie on qvr's PyMC export of the same program (`qvr export --to pymc`)."""
    import nutpie

    from qvr_core.check import check
    from qvr_core.export import TARGETS, export_program, exportable_programs

    path = MODELS / f"{name}.qvr"
    began = time.perf_counter()
    module = check(path.read_text(encoding="utf-8"))
    program = exportable_programs(module)[0]
    exported = export_program(module, TARGETS["pymc"], program, source=path.name)
    if exported.text is None:
        why = "; ".join(d.message for d in exported.diagnostics)
        raise RuntimeError(f"no PyMC export: {why}")
    namespace: dict[str, Any] = {"__name__": f"{program}_pymc"}
    exec(compile(exported.text, f"{program}_pymc.py", "exec"), namespace)
    model = namespace["build_model"](**qvr_data)
    compiled = nutpie.compile_pymc_model(model)
    built = time.perf_counter() - began
    began = time.perf_counter()
    trace = nutpie.sample(
        compiled,
        draws=s.draws,
        tune=s.warmup,
        chains=s.chains,
        seed=s.seed,
        progress_bar=False,
    )
    sampling = time.perf_counter() - began
    posterior = trace.posterior
    draws = spec.draws({k: np.asarray(posterior[k]) for k in posterior.data_vars}, qvr_data)
    divergences = int(np.asarray(trace.sample_stats["diverging"]).sum())
    fit = Fit("nutpie", built + sampling, sampling, built, divergences)
    return fit, by_parameter(draws, names)


# --- the bench -------------------------------------------------------------------------


def fmt(v: float, spec: str) -> str:
    return (
        "n/a" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)
    )


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def print_model(name: str, fits: list[Fit]) -> None:
    head = (
        f"  {'tool':<7} {'click s':>8} {'compile s':>10} {'sampling s':>11} {'min ESS':>8} "
        f"{'ESS/click s':>12} {'ESS/sampl. s':>13} {'div':>5} {'R-hat':>6} {'conv':>5} "
        f"{'match':>6}"
    )
    print(head)
    for f in fits:
        print(
            f"  {f.tool:<7} {f.click:8.2f} {f.compile:10.2f} {f.sampling:11.2f} "
            f"{fmt(f.ess, '8.0f')} {fmt(f.per_second(f.click), '12.1f')} "
            f"{fmt(f.per_second(f.sampling), '13.1f')} {f.divergences:5d} "
            f"{fmt(f.r_hat, '6.4f')} {'yes' if f.converged else 'no':>5} "
            f"{'yes' if f.matches else 'no':>6}" + (f"  ({f.note})" if f.note else "")
        )
        if f.worst:
            print(f"          outside the rule: {f.worst}")
    ours = next((f for f in fits if f.tool == "qvr"), None)
    for peer in (f for f in fits if f.tool != "qvr"):
        if ours is None:
            break
        click = ratio(ours.per_second(ours.click), peer.per_second(peer.click))
        alone = ratio(ours.per_second(ours.sampling), peer.per_second(peer.sampling))
        print(
            f"  qvr / {peer.tool}: ESS per click second {fmt(click, '.2f')}, "
            f"per second of sampling {fmt(alone, '.2f')}"
        )


def fit_model(
    name: str,
    spec: Spec,
    db: Path,
    peers: list[str],
    s: Settings,
    ref: dict[str, dict[str, float]],
    nutpie: bool,
) -> list[Fit]:
    """Each sampler's fit of one posterior, one after another (a failure is one line)."""
    names = list(ref)
    stan_data = json.loads((db / name / "data.json").read_text(encoding="utf-8"))
    qvr_data = spec.data(stan_data)
    fits: list[Fit] = []
    with tempfile.TemporaryDirectory() as tmp:
        data_path = Path(tmp) / f"{name}.json"  # what `qvr run --data` would read
        data_path.write_text(json.dumps(qvr_data), encoding="utf-8")
        runners: list[tuple[str, Callable[..., tuple], tuple]] = [
            ("qvr", run_qvr, (name, data_path, qvr_data, spec, names, s))
        ]
        if "stan" in peers:
            runners.append(("stan", run_stan, (name, db, names, s)))
        if "nutpie" in peers and nutpie:
            runners.append(("nutpie", run_nutpie, (name, qvr_data, spec, names, s)))
        for tool, run, arguments in runners:
            try:
                fit, draws = run(*arguments)
            except Exception as e:  # one sampler's failure is a line, not the bench's end
                said = [line for line in str(e).splitlines() if line.strip()][:2]
                print(f"  {tool}: failed: {type(e).__name__}: {' / '.join(said)}")
                continue
            fits.append(measure(fit, draws, ref))
    return fits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated posterior names (default: all)")
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain")
    parser.add_argument("--warmup", type=int, default=1000, help="warmup iterations per chain")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--peers", default=",".join(PEERS), help="comma-separated: stan, nutpie; '' for none"
    )
    parser.add_argument("--posteriordb", type=Path, default=DEFAULT_DB, help="the posteriors")
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="what samples qvr's runs (`qvr run --engine`): auto (the default), qvr or numpyro",
    )
    parser.add_argument(
        "--stan-rebuild",
        action="store_true",
        help="make PyStan compile each model (as after an edit) instead of using its cache",
    )
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    args = parser.parse_args(argv)
    db: Path = args.posteriordb
    if not db.is_dir():
        parser.error(f"--posteriordb {db}: not a folder")
    peers = [p for p in (args.peers or "").split(",") if p]
    unknown = set(peers) - set(PEERS)
    if unknown:
        parser.error(f"--peers: unknown {', '.join(sorted(unknown))} (known: {', '.join(PEERS)})")
    available = sorted(p.name for p in db.iterdir() if (p / "reference.json").is_file())
    chosen = args.models.split(",") if args.models else available
    missing = [n for n in chosen if n not in available]
    if missing:
        parser.error(f"--models: not in {db}: {', '.join(missing)}")
    s = Settings(args.draws, args.warmup, args.chains, args.seed, args.stan_rebuild, args.engine)

    import torch  # noqa: F401  # imported before the clocks start, as a warm editor has it

    import qvr_core.runs.run  # noqa: F401

    skip_nutpie = nutpie_missing() if "nutpie" in peers else None
    print(
        f"posteriordb ({db}): {s.chains} chains x ({s.warmup} warmup + {s.draws} draws), "
        f"seed {s.seed}, qvr engine {s.engine}, peers: {', '.join(peers) or 'none'}"
    )
    if skip_nutpie:
        print(f"nutpie: skipped, {skip_nutpie}")
    record: dict[str, Any] = {"settings": asdict(s), "models": {}}
    rows: list[tuple[str, list[Fit]]] = []
    for name in chosen:
        if name not in EXPRESSIBLE:
            continue
        spec = EXPRESSIBLE[name]
        ref = reference(db, name)
        print(f"\n== {name} ({len(ref)} reference parameters)")
        fits = fit_model(name, spec, db, peers, s, ref, skip_nutpie is None)
        print_model(name, fits)
        rows.append((name, fits))
        record["models"][name] = [asdict(f) for f in fits]
    if rows:
        print("\nsummary: converged / matches the reference, min bulk ESS per click second")
        for name, fits in rows:
            cells = ", ".join(
                f"{f.tool} {'c' if f.converged else '-'}{'m' if f.matches else '-'} "
                f"{fmt(f.per_second(f.click), '.1f')}"
                for f in fits
            )
            print(f"  {name}: {cells}")
    asked_out = [n for n in chosen if n not in EXPRESSIBLE]
    if asked_out:
        print("\nnot expressible in QVR today (input for issue 49):")
        for n in asked_out:
            print(f"  {n}: {NOT_EXPRESSIBLE.get(n, 'no .qvr program written for it yet')}")
    record["not_expressible"] = {n: NOT_EXPRESSIBLE.get(n, "") for n in asked_out}
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=1, default=float), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
