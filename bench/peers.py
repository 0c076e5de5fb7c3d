"""Eight schools end to end, as a user of each tool meets it: qvr against NumPyro and Stan.

    .venv/bin/python bench/inference_speed.py --model peers [--draws 1000] [--chains 4]
        [--seeds 1] [--peers numpyro,stan]

Each tool starts cold in a process of its own, reads the classic data, and runs NUTS
with `--chains` chains of `--draws` warmup and `--draws` draws (maximum tree depth 10,
each tool's default adaptation): `qvr run` on examples/models/eight_schools_noncentered.qvr;
NumPyro 0.22 (JAX on the CPU, chains vectorised in one process)
on the same model written in NumPyro; Stan through PyStan 3, compiling its model first
(as every edit of a Stan model does: a fresh comment in its text defeats httpstan's cache
of builds). Each writes its draws to a `.npz` file (`qvr run
--output qvr.npz`), so none pays for importing a netCDF writer. Tools that are not
installed are skipped with a line saying so (`pip install numpyro "jax[cpu]" pystan`; Stan
also needs a C++ compiler).

Every tool's draws go through the same ArviZ call: the smallest bulk ESS over mu, tau
and each theta_raw. Printed: wall time from the start of the process to its draws on
disk, that ESS, ESS per wall second, divergences, and the posterior means of mu and tau
(4.4 and 3.6 in the literature), and the seconds of the sampler alone (qvr's run after
its checks, NumPyro's `mcmc.run` with the JIT it pays inside it, Stan's `sample` after the
build) with ESS per second of them; then qvr's ESS per wall second and per second of
sampling as ratios of each peer's (against Stan's sampling alone, the ratio the issue
tracks: a compiled sampler's floor), and the two tools' divergences with the p-value of
an exact test of equal rates.
The row "qvr editor" is the same run clicked in the editor: `qvr.runInference` on a warm
server (bench/run_latency.py; `--no-editor` leaves it out), from the request to the final
summary, whose table gives its ESS (qvr's estimator, ArviZ's to 1e-6) and means.
With `--seeds N` every tool runs N times, with seeds 1 to N (each Stan run compiling
again): the table shows the means (divergences: the total) and the ratios are of mean
ESS over mean wall time, so one seed's luck (a divergence or two in 4,000 draws) is not read
as a property of a sampler.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "examples" / "models" / "eight_schools_noncentered.qvr"
DATA = ROOT / "examples" / "models" / "eight_schools.json"
PARAMETERS = ("mu", "tau", "theta_raw")
PEERS = ("numpyro", "stan")


@dataclass(frozen=True)
class Outcome:
    tool: str
    wall: float
    ess: float
    divergences: int
    mu: float
    tau: float
    sampling: float  # seconds of the sampler alone: no imports, parsing or compiling

    @property
    def ess_per_second(self) -> float:
        return self.ess / self.wall

    @property
    def ess_per_sampling_second(self) -> float:
        return self.ess / self.sampling


def _ess(draws: dict[str, np.ndarray]) -> float:
    """The smallest bulk ESS over every element of mu, tau and theta_raw (ArviZ)."""
    import arviz as az

    posterior = az.from_dict(posterior={k: draws[k] for k in PARAMETERS})
    ess = az.ess(posterior, method="bulk")
    return float(min(float(ess[k].min()) for k in PARAMETERS))


def _timed(command: list[str], cwd: Path | None = None) -> tuple[float, str]:
    """Wall seconds of `command`, run in `cwd` (a build's scratch files stay there), and
    what it printed."""
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr.strip()[-2000:]}")
    return wall, done.stdout


def run_editor(chains: int, draws: int, seed: int = 1, pause: float = 10.0) -> Outcome:
    """The same run from the editor: `qvr.runInference` on a warm server (a fresh server
    shown the model's code lenses `pause` seconds before, as a user reads it before
    clicking Run; bench/run_latency.py), timed from the request to the final summary,
    whose table (qvr's ESS, ArviZ's to 1e-6) gives the ESS and means."""
    import asyncio

    from run_latency import one_run

    wall, summary = asyncio.run(one_run(True, draws, pause, chains=chains, seed=seed))
    rows = [r for r in summary["posterior"]["rows"] if r["site"] in PARAMETERS]
    mean = {r["label"]: float(r["mean"]) for r in rows}
    return Outcome(
        "qvr editor",
        wall,
        min(float(r["ess_bulk"]) for r in rows),
        int(summary["divergences"]),
        mean["mu"],
        mean["tau"],
        float(summary["seconds"]),
    )


def run_qvr(chains: int, draws: int, out: Path, seed: int = 1) -> Outcome:
    target = out / "qvr.npz"
    qvr = str(Path(sys.executable).with_name("qvr"))
    wall, printed = _timed(
        [qvr, "run", str(MODEL), "--data", str(DATA), "--method", "nuts",
         "--steps", str(2 * draws), "--chains", str(chains), "--max-tree-depth", "10",
         "--seed", str(seed), "--output", str(target), "--json"]
    )  # fmt: skip
    sampling = float(json.loads(printed)["seconds"])  # the chains' run, warmup included
    with np.load(target) as data:
        samples = {k: data[f"posterior/{k}"] for k in PARAMETERS}
        divergences = int(data["sample_stats/diverging"].sum())
    return _outcome("qvr run", wall, samples, divergences, sampling)


NUMPYRO = """
import json, sys, time
import numpy as np
import jax.numpy as jnp
from jax import random
import numpyro
import numpyro.distributions as dist
from numpyro.infer import MCMC, NUTS

chains, draws, data, out, seed = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                  sys.argv[4], int(sys.argv[5]))
numpyro.set_host_device_count(1)
d = json.load(open(data))
y, sigma = jnp.array(d["y"], dtype=float), jnp.array(d["sigma"], dtype=float)

def model(sigma, y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = numpyro.sample("tau", dist.HalfCauchy(5.0))
    with numpyro.plate("school", 8):
        theta_raw = numpyro.sample("theta_raw", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(mu + tau * theta_raw, sigma), obs=y)

mcmc = MCMC(NUTS(model, max_tree_depth=10), num_warmup=draws, num_samples=draws,
            num_chains=chains, chain_method="vectorized", progress_bar=False)
began = time.perf_counter()  # its JIT compiles inside run: counted here
mcmc.run(random.PRNGKey(seed), sigma, y, extra_fields=("diverging",))
s = mcmc.get_samples(group_by_chain=True)
sampling = time.perf_counter() - began
div = int(np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"]).sum())
np.savez(out, div=div, sampling=sampling, **{k: np.asarray(v) for k, v in s.items()})
"""

STAN_MODEL = """
data { array[8] real y; array[8] real<lower=0> sigma; }
parameters { real mu; real<lower=0> tau; vector[8] theta_raw; }
model {
  mu ~ normal(0, 5);
  tau ~ cauchy(0, 5);
  theta_raw ~ std_normal();
  y ~ normal(mu + tau * theta_raw, sigma);
}
"""

STAN = """
import json, sys, time
import numpy as np
import stan

chains, draws, data, out, seed, code = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                        sys.argv[4], int(sys.argv[5]), sys.argv[6])
d = json.load(open(data))
posterior = stan.build(open(code).read(), data=d, random_seed=seed)
began = time.perf_counter()  # the compiled model's sampling alone
fit = posterior.sample(num_chains=chains, num_warmup=draws, num_samples=draws,
                       max_depth=10)
sampling = time.perf_counter() - began
def by_chain(name):
    a = np.asarray(fit[name])  # (*shape, draws * chains), the chains interleaved
    a = a.reshape(*a.shape[:-1], draws, chains)
    return np.moveaxis(np.moveaxis(a, -1, 0), -1, 1)
div = int(np.asarray(fit["divergent__"]).sum())
np.savez(out, div=div, sampling=sampling, mu=by_chain("mu"), tau=by_chain("tau"),
         theta_raw=by_chain("theta_raw"))
"""


def run_script(
    tool: str, script: str, chains: int, draws: int, out: Path, seed: int, *extra: str
) -> Outcome:
    program = out / f"run_{tool}.py"  # not `numpyro.py`, which would shadow the package
    program.write_text(textwrap.dedent(script), encoding="utf-8")
    target = out / f"{tool}.npz"
    command = [sys.executable, str(program), str(chains), str(draws), str(DATA), str(target),
               str(seed)]  # fmt: skip
    wall, _ = _timed([*command, *extra], cwd=out)
    got = np.load(target)
    samples = {k: got[k] for k in PARAMETERS}
    return _outcome(tool, wall, samples, int(got["div"]), float(got["sampling"]))


def _outcome(
    tool: str, wall: float, samples: dict[str, np.ndarray], div: int, sampling: float
) -> Outcome:
    mu, tau = float(samples["mu"].mean()), float(samples["tau"].mean())
    return Outcome(tool, wall, _ess(samples), div, mu, tau, sampling)


def _installed(module: str) -> bool:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return done.returncode == 0


def main(
    chains: int = 4,
    draws: int = 1000,
    seeds: int = 1,
    tools: tuple[str, ...] = PEERS,
    editor: bool = True,
) -> None:
    print(f"eight schools, non-centred: {chains} chains x ({draws} warmup + {draws} draws), "
          f"cold start, max tree depth 10, seeds 1..{seeds}")  # fmt: skip
    runs: dict[str, list[Outcome]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        numpyro = "numpyro" in tools and _installed("numpyro")
        stan = "stan" in tools and _installed("stan")
        if "numpyro" in tools and not numpyro:
            print("NumPyro: not installed (pip install numpyro 'jax[cpu]'), skipped")
        if "stan" in tools and not stan:
            print("Stan: PyStan not installed (pip install pystan), skipped")
        elif stan and shutil.which("g++") is None:
            print("Stan: no C++ compiler (g++), skipped")
            stan = False
        for seed in range(1, seeds + 1):  # tools alternate, so load drifts reach all alike
            runs.setdefault("qvr run", []).append(run_qvr(chains, draws, out, seed))
            if editor:
                runs.setdefault("qvr editor", []).append(run_editor(chains, draws, seed))
            if numpyro:
                runs.setdefault("numpyro", []).append(
                    run_script("numpyro", NUMPYRO, chains, draws, out, seed)
                )
            if stan:
                code = out / "eight_schools.stan"
                # httpstan caches a build by the program's text: a new comment makes this
                # run compile, as the first run after an edit of the model does
                code.write_text(f"{STAN_MODEL}// run {time.time_ns()}\n", encoding="utf-8")
                runs.setdefault("stan", []).append(
                    run_script("stan", STAN, chains, draws, out, seed, str(code))
                )
    results = [_mean(tool, outcomes) for tool, outcomes in runs.items()]
    print(f"{'tool':<10} {'wall s':>8} {'min bulk ESS':>13} {'ESS/s':>8} {'div':>5} "
          f"{'mu':>6} {'tau':>6} {'sampling s':>11} {'ESS/sampling s':>15}")  # fmt: skip
    for r in results:
        print(f"{r.tool:<10} {r.wall:8.1f} {r.ess:13.0f} {r.ess_per_second:8.1f} "
              f"{r.divergences:5d} {r.mu:6.2f} {r.tau:6.2f} {r.sampling:11.2f} "
              f"{r.ess_per_sampling_second:15.0f}")  # fmt: skip
    ours = results[0]
    total = seeds * chains * draws
    if editor:
        mine = next(r for r in results if r.tool == "qvr editor")
        print(f"qvr editor / qvr run: wall {mine.wall / ours.wall:.2f} (Run on a warm server "
              f"against a cold command line)")  # fmt: skip
    for peer in (r for r in results[1:] if r.tool != "qvr editor"):
        ratio = ours.ess_per_second / peer.ess_per_second
        alone = ours.ess_per_sampling_second / peer.ess_per_sampling_second
        print(f"qvr / {peer.tool}: ESS per wall second {ratio:.2f}, per second of "
              f"sampling alone {alone:.2f}")  # fmt: skip
        print(divergence_comparison(ours.divergences, peer.divergences, total, peer.tool))
    print(json.dumps({tool: [o.__dict__ for o in outcomes] for tool, outcomes in runs.items()}))


def divergence_comparison(ours: int, theirs: int, draws: int, peer: str) -> str:
    """The two counts of divergent draws (each of `draws`) and the exact two-sided p-value
    of equal rates (given their total, each divergence is qvr's with probability 1/2):
    a handful of divergences is read as a difference only when the test says so."""
    from scipy.stats import binomtest

    line = f"divergences: qvr {ours}, {peer} {theirs}, of {draws:,} draws each"
    if ours + theirs == 0:
        return f"{line} (none)"
    p = binomtest(ours, ours + theirs, 0.5).pvalue
    return f"{line}: equal rates p = {p:.2f} (exact binomial test given the total)"


def _mean(tool: str, outcomes: list[Outcome]) -> Outcome:
    """The seeds' means (divergences summed)."""
    n = len(outcomes)
    return Outcome(
        tool,
        sum(o.wall for o in outcomes) / n,
        sum(o.ess for o in outcomes) / n,
        sum(o.divergences for o in outcomes),
        sum(o.mu for o in outcomes) / n,
        sum(o.tau for o in outcomes) / n,
        sum(o.sampling for o in outcomes) / n,
    )


if __name__ == "__main__":
    main()
