"""Inference speed: qvr against the same model written by hand in Pyro, in one run.

    .venv/bin/python bench/inference_speed.py [--model all|rnn|eight_schools|chains|peers]
        [--seeds N (peers)] [--peers numpyro,stan (peers)] [--no-editor (peers)]
        [--batch 64] [--seq-len 32] [--threads N] [--denormals both|kept|flushed]
        [--warmup 500] [--draws 1000] [--chains 3] [--steps 1000]

Two models.

Eight schools (non-centred, examples/models/eight_schools_noncentered.qvr, the
classic data): whole NUTS runs, qvr's MCMC on the compiled model program against
Pyro's NUTS on the same model written in Pyro (with and without its JIT), the
same warmup and draws, one torch thread for both (what `qvr run` uses for model
programs). Chains alternate between the samplers, each seeded; effective samples
are computed by the same function (qvr's, Stan's estimator) on both samples, and
the figure is the smallest ESS over mu, tau and every theta_raw per second of CPU
time (wall time beside it: on a shared machine it also counts waiting).

The vanilla RNN LM: the gallery's (examples/vanilla_rnn_lm.qvr). The Pyro
version computes the same density: the hidden state h is scored along the
canonical path (every cell application before the last replaced by its mean,
h ~ Normal(cell(x_L, h_{L-1}), 0.1)), the next token is Categorical(lm_head(h)).
Both start from the same weights, and the script checks that the two log-joints
agree before timing anything.

Timed:
- one SVI step (guide draw, ELBO, backward, Adam step): qvr's AutoNormalGuide +
  ELBO + SVI (as a run steps it: recorded and replayed, `inference.recorded_step`,
  once eager steps have taken half a second; and kept eager, the row "SVI eager
  step") against Pyro's AutoNormal + Trace_ELBO + SVI, and against the same
  step written by hand in plain torch, without a framework (`HandSVI`: the same
  mean-field Normal over h, shared across the batch as qvr's guide is, the
  same ELBO averaged over the batch, the same Adam; goal: qvr at most 1.05x);
- one NUTS potential-and-gradient evaluation on the lifted model (every weight
  and h latent): qvr's `ProgramPotential` against Pyro's `potential_fn` from
  `initialize_model` with `pyro.ops.integrator.potential_grad`;
- for attribution, the model alone (log joint and backward, no inference code):
  the compiled qvr program against the same function in plain torch.

`--model chains` measures what advancing NUTS chains together buys: the wall
time of 4 chains run by `run_chains` together in this process (their potentials
compiled and batched, `inference.many`), and split over one process per core,
against the same 4 chains one after another with the eager potential (1 chain x 4),
on eight schools and on the lifted linear regression of examples/linear_regression.qvr.

`--model peers` runs eight schools end to end, cold, in `qvr run`, NumPyro and
Stan (bench/peers.py says how; the `peers` extra installs the two), and prints
each tool's wall time, smallest bulk ESS and ESS per wall second.

The two implementations are measured in alternating rounds (median of the
rounds) so that load on the machine affects both alike, once with denormal
floats kept (torch's default) and once flushed to zero (what `qvr run` and the
editor's runs do): qvr's ELBO is a mean over the batch, so its gradients through
the 32-step saturated recurrence reach the denormal range, where CPU matrix
products slow down several times.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    import pyro
except ImportError as missing:  # the baseline is not a test dependency
    raise SystemExit(
        "bench/inference_speed.py compares against Pyro, which is in the bench extra: "
        "install it with `.venv/bin/pip install -c constraints.txt -e '.[bench]'`"
    ) from missing
import pyro.distributions as dist
import torch
from pyro.infer import SVI as PyroSVI
from pyro.infer import Trace_ELBO
from pyro.infer.autoguide import AutoNormal
from pyro.infer.mcmc.util import initialize_model
from pyro.ops.integrator import potential_grad
from torch import nn

from qvr_core.dsl import load
from qvr_core.inference import ELBO, SVI, AutoNormalGuide, bayesian_lift_parameters
from qvr_core.inference.many import ManyPotential
from qvr_core.inference.mcmc import ProgramPotential
from qvr_core.inference.sites import FlatLayout, make_sites

ROOT = Path(__file__).resolve().parents[1]
SCALE = 0.1


#: the hand model's layers and the qvr parameter networks they copy
LAYERS = {
    "cell_h": "cell.net.hidden",
    "cell_o": "cell.net.out",
    "head_h": "lm_head.net.hidden",
    "head_o": "lm_head.net.out",
}


class HandRNN(nn.Module):
    """The vanilla RNN LM's weights, copied from the qvr model, as plain parameters.

    A qvr affine layer may scale its input (`gain`, e.g. 1/sqrt(fan-in)); the
    hand model applies the same factor so that both compute one function.
    """

    def __init__(self, qvr_model: nn.Module) -> None:
        super().__init__()
        params = dict(qvr_model.named_parameters())
        modules = dict(qvr_model.named_modules())
        self.embed = nn.Parameter(params["morphisms.tok_embed.table"].detach().clone())
        self.gains: dict[str, float] = {}
        for short, key in LAYERS.items():
            weight = params[f"morphisms.{key}.weight"].detach().clone()
            bias = params[f"morphisms.{key}.bias"].detach().clone()
            self.register_parameter(f"{short}_w", nn.Parameter(weight))
            self.register_parameter(f"{short}_b", nn.Parameter(bias))
            self.gains[short] = float(getattr(modules[f"morphisms.{key}"], "gain", 1.0))


def layer(theta: dict[str, torch.Tensor], gains: dict[str, float], k: str, v: torch.Tensor):
    return nn.functional.linear(v * gains[k], theta[f"{k}_w"], theta[f"{k}_b"])


def h_loc(theta: dict[str, torch.Tensor], gains: dict[str, float], x: torch.Tensor):
    """Mean of the last cell application, earlier cells at their means."""
    e = theta["embed"][x]  # (B, L, 64)
    h = torch.zeros(x.shape[0], 128)
    for e_t in e.unbind(1):  # one backward for all steps (slices would each write all of e)
        z = torch.tanh(layer(theta, gains, "cell_h", torch.cat([e_t, h], dim=-1)))
        h = layer(theta, gains, "cell_o", z)
    return h


def logits(theta: dict[str, torch.Tensor], gains: dict[str, float], h: torch.Tensor):
    return layer(theta, gains, "head_o", torch.tanh(layer(theta, gains, "head_h", h)))


def pyro_model(net: HandRNN, x: torch.Tensor, y: torch.Tensor) -> None:
    pyro.module("rnn", net)
    theta = dict(net.named_parameters())
    with pyro.plate("batch", x.shape[0]):
        h = pyro.sample("h", dist.Normal(h_loc(theta, net.gains, x), SCALE).to_event(1))
        pyro.sample("next_token", dist.Categorical(logits=logits(theta, net.gains, h)), obs=y)


def pyro_lifted_model(net: HandRNN, x: torch.Tensor, y: torch.Tensor) -> None:
    """Every weight a Normal(0, 1) latent, then the model above with them in place."""
    theta = {
        name: pyro.sample(name, dist.Normal(0.0, 1.0).expand(p.shape).to_event(p.dim()))
        for name, p in net.named_parameters()
    }
    with pyro.plate("batch", x.shape[0]):
        h = pyro.sample("h", dist.Normal(h_loc(theta, net.gains, x), SCALE).to_event(1))
        pyro.sample("next_token", dist.Categorical(logits=logits(theta, net.gains, h)), obs=y)


class HandSVI:
    """One SVI step of the vanilla RNN LM in plain torch: what a user would write by hand."""

    def __init__(self, net: HandRNN, lr: float) -> None:
        self.net = net
        self.theta = dict(net.named_parameters())
        self.loc = nn.Parameter(torch.zeros(128))
        self.log_scale = nn.Parameter(torch.full((128,), math.log(0.1)))
        params = [*net.parameters(), self.loc, self.log_scale]
        self.optim = torch.optim.Adam(params, lr=lr, foreach=True)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.optim.zero_grad(set_to_none=True)
        eps = torch.randn(x.shape[0], 128)
        h = self.loc + self.log_scale.exp() * eps
        log_q = (-0.5 * eps**2 - self.log_scale - HALF_LOG_2PI).sum(-1)
        z = (h - h_loc(self.theta, self.net.gains, x)) / SCALE
        log_h = (-0.5 * z**2 - math.log(SCALE) - HALF_LOG_2PI).sum(-1)
        log_y = torch.log_softmax(logits(self.theta, self.net.gains, h), -1)
        log_p = log_h + log_y.gather(-1, y.reshape(-1, 1)).squeeze(-1)
        loss = -(log_p - log_q).mean()
        loss.backward()
        self.optim.step()
        return float(loss.detach())


HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Seconds per call over `repeat` calls."""
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def compare(
    name: str, ours: Callable[[], object], theirs: Callable[[], object], rounds: int, repeat: int
) -> tuple[str, float, float]:
    for fn in (ours, theirs):  # warm up caches and lazy initialisation
        for _ in range(3):
            fn()
    a, b = [], []
    for _ in range(rounds):
        a.append(timed(ours, repeat))
        b.append(timed(theirs, repeat))
    return name, statistics.median(a), statistics.median(b)


EIGHT_Y = [28.0, 8, -3, 7, -1, 1, 18, 12]
EIGHT_SIGMA = [15.0, 10, 16, 11, 9, 11, 10, 18]


def pyro_eight_schools(sigma: torch.Tensor, y: torch.Tensor) -> None:
    mu = pyro.sample("mu", dist.Normal(0.0, 5.0))
    tau = pyro.sample("tau", dist.HalfCauchy(5.0))
    with pyro.plate("school", 8):
        theta_raw = pyro.sample("theta_raw", dist.Normal(0.0, 1.0))
        pyro.sample("y", dist.Normal(mu + tau * theta_raw, sigma), obs=y)


def min_ess(samples: dict[str, torch.Tensor]) -> float:
    """The smallest bulk effective sample size over every element of the sites (one chain)."""
    import numpy as np

    from qvr_core.inference.convergence import ess_bulk

    return min(float(np.nanmin(ess_bulk(s.reshape(1, s.shape[0], -1)))) for s in samples.values())


def eight_schools(args: argparse.Namespace) -> None:
    from pyro.infer import MCMC as PyroMCMC
    from pyro.infer import NUTS as PyroNUTS

    from qvr_core.check import check
    from qvr_core.inference.mcmc import MCMC
    from qvr_core.inference.nuts import NUTSKernel
    from qvr_core.runtime.model import compile_model

    torch.set_num_threads(1)
    source = (ROOT / "examples" / "models" / "eight_schools_noncentered.qvr").read_text()
    model = compile_model(check(source), "eight_schools")
    sigma, y = torch.tensor(EIGHT_SIGMA), torch.tensor(EIGHT_Y)
    data, obs = {"sigma": sigma}, {"y": y}
    model.run(data, obs)

    def qvr_chain(seed: int) -> tuple[dict[str, torch.Tensor], int]:
        torch.manual_seed(seed)
        result = MCMC(NUTSKernel(), args.warmup, args.draws).run(model, data, obs)
        return {k: v[0] for k, v in result.samples.items()}, int(result.divergence_counts.sum())

    def pyro_chain(seed: int, jit: bool) -> tuple[dict[str, torch.Tensor], int]:
        pyro.set_rng_seed(seed)
        kernel = PyroNUTS(pyro_eight_schools, jit_compile=jit, ignore_jit_warnings=True)
        mcmc = PyroMCMC(kernel, args.draws, args.warmup, disable_progbar=True)
        mcmc.run(sigma, y)
        diverging = mcmc.diagnostics()["divergences"]["chain 0"]
        return {k: v.detach() for k, v in mcmc.get_samples().items()}, len(diverging)

    samplers = {
        "qvr": qvr_chain,
        "pyro": lambda seed: pyro_chain(seed, False),
        "pyro jit": lambda seed: pyro_chain(seed, True),
    }
    rows: dict[str, list[tuple[float, float, float, int, float, float]]] = {k: [] for k in samplers}
    for chain in range(args.chains):
        for name, run in samplers.items():
            wall, cpu = time.perf_counter(), time.process_time()
            samples, divergences = run(chain)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            ess = min_ess(samples)
            mu, tau = float(samples["mu"].mean()), float(samples["tau"].mean())
            rows[name].append((ess, cpu, wall, divergences, mu, tau))
    print(
        f"eight schools (non-centred), NUTS, {args.warmup} warmup + {args.draws} draws, "
        f"{args.chains} chain(s) each, 1 torch thread"
    )
    print(
        f"{'':10}{'min ESS':>9}{'cpu s':>8}{'wall s':>8}{'ESS/cpu s':>11}{'ESS/wall s':>11}"
        f"{'diverg.':>9}{'mu':>8}{'tau':>8}"
    )
    per_cpu = {}
    for name, rs in rows.items():
        ess = sum(r[0] for r in rs)
        cpu, wall = sum(r[1] for r in rs), sum(r[2] for r in rs)
        per_cpu[name] = ess / cpu
        print(
            f"{name:10}{ess / len(rs):9.0f}{cpu / len(rs):8.1f}{wall / len(rs):8.1f}"
            f"{ess / cpu:11.1f}{ess / wall:11.1f}{sum(r[3] for r in rs):9d}"
            f"{statistics.mean(r[4] for r in rs):8.2f}{statistics.mean(r[5] for r in rs):8.2f}"
        )
    for name in ("pyro", "pyro jit"):
        print(
            f"qvr / {name}: {per_cpu['qvr'] / per_cpu[name]:.2f}x effective samples per cpu second"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", choices=("all", "rnn", "eight_schools", "chains", "peers"), default="all"
    )
    parser.add_argument("--warmup", type=int, default=500, help="eight schools: NUTS warmup")
    parser.add_argument("--draws", type=int, default=1000, help="eight schools: NUTS draws")
    parser.add_argument("--chains", type=int, default=3, help="eight schools: chains per sampler")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument(
        "--denormals",
        choices=("both", "kept", "flushed"),
        default="both",
        help="time with denormal floats kept, flushed to zero (what `qvr run` does), or both",
    )
    parser.add_argument("--steps", type=int, default=1000, help="chains: NUTS iterations per chain")
    parser.add_argument("--seeds", type=int, default=1, help="peers: runs per tool (seeds 1..N)")
    parser.add_argument(
        "--peers", default="numpyro,stan", help="peers: the tools beside qvr, comma-separated"
    )
    parser.add_argument(
        "--no-editor",
        dest="editor",
        action="store_false",
        help="peers: leave out the run clicked in the editor (qvr.runInference, warm server)",
    )
    args = parser.parse_args()
    if args.model == "peers":  # 4 x (1,000 + 1,000) unless --chains and --draws say otherwise
        from peers import main as peers

        chains = args.chains if "--chains" in sys.argv else 4
        tools = tuple(t.strip() for t in args.peers.split(",") if t.strip())
        peers(chains=chains, draws=args.draws, seeds=args.seeds, tools=tools, editor=args.editor)
        return
    if args.model in ("all", "eight_schools"):
        threads = torch.get_num_threads()
        eight_schools(args)
        torch.set_num_threads(threads)
        if args.model == "eight_schools":
            return
        print()
    if args.model in ("all", "chains"):
        chains_speed(args.steps, args.rounds)
        if args.model == "chains":
            return
        print()
    if args.threads:
        torch.set_num_threads(args.threads)
    pyro.set_rng_seed(0)
    torch.distributions.Distribution.set_default_validate_args(False)
    pyro.enable_validation(False)

    model = load(ROOT / "examples" / "vanilla_rnn_lm.qvr").morphism
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    x = model.example_input(args.batch, args.seq_len)
    with torch.no_grad():
        values = model.run(x).values
    y = values["next_token"]
    obs = {"next_token": y}
    net = HandRNN(model)

    # Same model? Compare the log joint at one point.
    with torch.no_grad():
        ours = model.log_joint(x, values).sum()
        tr = pyro.poutine.trace(pyro.poutine.condition(pyro_model, {"h": values["h"]})).get_trace(
            net, x, y
        )
        theirs = tr.log_prob_sum()
    print(f"log joint: qvr {float(ours):.3f}, pyro {float(theirs):.3f}")
    assert torch.allclose(ours, theirs, rtol=1e-4), "the two models disagree"

    # SVI step.
    guide = AutoNormalGuide(model, observed_names={"next_token"})
    params = [*model.parameters(), *guide.parameters()]
    svi = SVI(model, guide, torch.optim.Adam(params, lr=1e-3, foreach=True), ELBO())
    for _ in range(400):  # as in a run: eager steps, then the step recorded and replayed
        if svi.replaying:
            break
        svi.step(x, obs)
    print(f"SVI step recorded and replayed after {svi.num_steps} steps: {svi.replaying}")
    eager_model = load(ROOT / "examples" / "vanilla_rnn_lm.qvr").morphism
    eager_model.load_state_dict(model.state_dict())
    eager_guide = AutoNormalGuide(eager_model, observed_names={"next_token"})
    eager_params = [*eager_model.parameters(), *eager_guide.parameters()]
    eager_optim = torch.optim.Adam(eager_params, lr=1e-3, foreach=True)
    eager_svi = SVI(eager_model, eager_guide, eager_optim, ELBO(), record_after=None)
    pyro.clear_param_store()
    pguide = AutoNormal(pyro_model)
    psvi = PyroSVI(pyro_model, pguide, pyro.optim.Adam({"lr": 1e-3}), Trace_ELBO())
    hand = HandSVI(HandRNN(model), lr=1e-3)
    flat_y = y.reshape(-1)
    cases = [
        ("SVI step / Pyro", lambda: svi.step(x, obs), lambda: psvi.step(net, x, y)),
        ("SVI step / plain torch", lambda: svi.step(x, obs), lambda: hand.step(x, flat_y)),
        (
            "SVI eager step / plain torch",
            lambda: eager_svi.step(x, obs),
            lambda: hand.step(x, flat_y),
        ),
    ]

    # NUTS potential and gradient on the lifted model.
    h_shape = tuple(values["h"].shape)
    lifted, lx, lobs = bayesian_lift_parameters(model, x, obs, additional_latents={"h": h_shape})
    init = lifted.initial_values(lx, lobs)
    layout = FlatLayout(make_sites(lifted, init, lifted.site_names))
    potential = ProgramPotential(lifted, lx, lobs, layout)
    z = layout.pack(init)
    init_params, potential_fn, _, _ = initialize_model(
        pyro_lifted_model,
        model_args=(net, x, y),
        init_strategy=pyro.infer.autoguide.init_to_sample,
    )
    pz = {n: v.detach() for n, v in init_params.items()}
    cases.append(
        (
            "NUTS pot.+grad / Pyro",
            lambda: potential(z),
            lambda: potential_grad(potential_fn, pz),
        )
    )
    # What the chains use: the potential recorded and traced once (`inference.many`),
    # one chain's row; when it cannot be compiled the row is the eager one above.
    compiled = ManyPotential(potential, potential.log_density, z.unsqueeze(0))
    row = z.unsqueeze(0)
    name = "NUTS compiled pot.+grad / Pyro" if compiled.compiled else "NUTS (not compiled) / Pyro"
    cases.append((name, lambda: compiled(row), lambda: potential_grad(potential_fn, pz)))

    # Attribution: the model alone (log joint and its gradient, no inference code):
    # qvr's compiled runtime against the same function written in plain torch.
    h_value = values["h"]
    theta = dict(net.named_parameters())

    def runtime_only() -> None:
        model.log_joint(x, {**obs, "h": h_value}).sum().backward()

    def hand_only() -> None:
        d = dist.Normal(h_loc(theta, net.gains, x), SCALE).log_prob(h_value).sum()
        c = dist.Categorical(logits=logits(theta, net.gains, h_value)).log_prob(y).sum()
        (d + c).backward()

    cases.append(("model log joint+grad / torch", runtime_only, hand_only))

    modes = {"both": (False, True), "kept": (False,), "flushed": (True,)}[args.denormals]
    print(
        f"vanilla RNN LM, batch {args.batch}, seq {args.seq_len}, "
        f"{torch.get_num_threads()} torch thread(s), median of {args.rounds} rounds"
    )
    for flush in modes:
        torch.set_flush_denormal(flush)
        rows = [compare(name, a, b, args.rounds, args.repeat) for name, a, b in cases]
        print(f"\ndenormal floats {'flushed to zero' if flush else 'kept'}:")
        print(f"{'qvr against':30}{'qvr ms':>10}{'other ms':>10}{'ratio':>10}")
        for name, a, b in rows:
            print(f"{name:30}{a * 1e3:10.2f}{b * 1e3:10.2f}{a / b:10.2f}")
    torch.set_flush_denormal(False)
    print(
        "\n(plain torch: the same step or function written by hand; the last row has no "
        "inference code, only the model)"
    )


def chains_speed(steps: int, rounds: int) -> None:
    """Wall time of 4 chains in parallel processes against the same 4 run one by one, on
    eight schools (a model program, one torch thread as `qvr run` runs it) and on the
    lifted linear regression of the seeds' runtime (2 torch threads here)."""
    from qvr_core.runs.data import read_data
    from qvr_core.runs.model_data import one_thread, split_data
    from qvr_core.runs.prepare import _compile, _synthetic
    from qvr_core.runs.prepare import checked_program as _check
    from qvr_core.runtime.model import compile_model

    models = ROOT / "examples" / "models"
    checked, name = _check((models / "eight_schools_noncentered.qvr").read_text(), None, None)
    schools = compile_model(checked, name)
    sx, sobs = split_data(schools, read_data(models / "eight_schools.json"), "eight schools")
    with torch.no_grad():
        schools.run(sx, sobs)
    with one_thread():
        time_chains("eight schools (non-centred)", schools, sx, sobs, steps, rounds)

    checked, name = _check((ROOT / "examples" / "linear_regression.qvr").read_text(), None, None)
    model = _compile(checked, None, name, 0, 1 << 32)
    x, observations = _synthetic(model, ["y"], 0, 16, 1)
    lifted, lx, lobs = bayesian_lift_parameters(model, x, observations)
    print()
    time_chains("linear regression (lifted)", lifted, lx, lobs, steps, rounds)


def time_chains(
    title: str, model: Any, x: Any, observations: dict, steps: int, rounds: int
) -> None:
    from qvr_core.inference.chains import default_processes, run_chains
    from qvr_core.inference.mcmc import MCMC
    from qvr_core.inference.nuts import NUTSKernel

    kernel = NUTSKernel(max_tree_depth=6)
    warmup = steps // 2
    processes = default_processes(4)
    torch.set_flush_denormal(True)

    def once(procs: int | None) -> float:
        start = time.perf_counter()
        if procs is None:  # before: each chain alone, its potential eager
            MCMC(kernel, warmup, steps - warmup, 4).run(model, x, observations)
        else:
            run_chains(
                model, x, observations, kernel, warmup, steps - warmup, chains=4, processes=procs
            )
        return time.perf_counter() - start

    times: dict[str, list[float]] = {"together": [], "processes": [], "alone": []}
    for _ in range(max(1, rounds // 2)):  # alternate, so load on the machine hits all three
        times["together"].append(once(1))
        times["processes"].append(once(processes))
        times["alone"].append(once(None))
    t, p, s = (statistics.median(times[k]) for k in ("together", "processes", "alone"))
    print(
        f"{title}: 4 NUTS chains of {steps} iterations ({torch.get_num_threads()} torch "
        f"threads here), median of {len(times['alone'])} rounds"
    )
    print(f"{'4 chains together, here':34}{t:8.2f} s")
    print(f"{f'4 chains in {processes} processes':34}{p:8.2f} s")
    print(f"{'1 chain x 4, one by one, eager':34}{s:8.2f} s")
    print(f"{'together / one by one':34}{t / s:8.2f}")
    print(f"{'processes / one by one':34}{p / s:8.2f}")


if __name__ == "__main__":
    main()
