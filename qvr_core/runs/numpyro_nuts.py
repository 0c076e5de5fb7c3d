"""qvr's NUTS run by NumPyro on the program's NumPyro export (`qvr run --engine numpyro`).

qvr's own sampler (`inference.nuts`) evaluates the potential through torch, one aten
operation at a time, and builds each tree in Python: on a model whose one evaluation is
a hundred small operations (gp_pois_regr: an 11 x 11 Cholesky factor and its gradient)
that is about 100 us a leapfrog step of each chain, where Stan takes 4 us. NumPyro
compiles the whole transition, the tree and the model's log density with its gradient,
into one XLA program, so a step costs the arithmetic. The model it runs is the one
`qvr export --to numpyro` writes, which `tests/export` holds to qvr's log density at
every example; the engine runs that text (written here, from the checked module; never
a file) and reads the draws back under qvr's site names, so the summary, the results
and the editor's live draws are the ones qvr's own sampler gives.

What it runs is NumPyro's NUTS with Stan's windowed adaptation: a diagonal (`--mass-matrix
diag` or `auto`) or dense metric, started where NumPyro starts (`init_to_uniform`, Stan's
rule: uniform in (-2, 2) on the unconstrained space) or at a draw of the prior
(`--init prior`). The chains advance together in one vectorised program, `BLOCK`
iterations a call, so progress, a stop and the live draws come between calls. qvr's
Fisher and low-rank metrics, its Pathfinder starts, programs with discrete latents (which
NumPyro would need funsor to sum out) and programs the export cannot write are refused
with the reason; `qvr run` without `--engine` keeps qvr's sampler for them.

JAX computes in float64 here, as qvr does (`jax_enable_x64`, set when the engine is first
used). JAX's first compile of a model takes seconds; it is counted in the run's time.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, export_program
from qvr_core.host import extras
from qvr_core.host.extras import NUMPYRO_MODULES
from qvr_core.inference.chains import ChainDraw, projected_tree_seconds
from qvr_core.inference.errors import InferenceError
from qvr_core.inference.mcmc import ChainState, MCMCResult, chain_layout, diagnosed
from qvr_core.runtime.errors import first_line, format_diagnostics
from qvr_core.runtime.program import Observed

#: Where a NumPyro run's chains start, as `NutsStats.starts` reports it.
UNIFORM_STARTS = "uniform"
#: The metrics NumPyro adapts, by qvr's names (`auto` is Stan's diagonal here).
METRICS = {"auto": "diag", "diag": "diag", "dense": "dense"}


def missing() -> str | None:
    """Why the engine cannot run in this environment, or None."""
    absent = extras.missing(NUMPYRO_MODULES)
    if absent:
        return (
            f"the numpyro engine needs {' and '.join(absent)}, not installed here: "
            "pip install 'qvr[numpyro]'"
        )
    return None


@dataclass(frozen=True)
class Engine:
    """A run's request for this engine: the checked source it exports `program` from, the
    device the run was asked for, and the source's name in messages. `auto`: NumPyro
    takes the draws on from qvr's warmup where that pays (`Takeover`); otherwise it runs
    the whole run."""

    checked: CheckedModule
    program: str
    device: str
    path: str | None = None
    auto: bool = False


@dataclass(frozen=True)
class EngineRun:
    """One NUTS run's settings, as `runs.methods.run_nuts` has them."""

    num_warmup: int
    num_samples: int
    chains: int
    seed: int
    max_tree_depth: int
    target_accept: float
    mass_matrix: str
    init: str


def refusal(run: EngineRun, device: str) -> str | None:
    """Why these settings cannot run on the engine (before anything is exported)."""
    if run.mass_matrix not in METRICS:
        return (
            f"--mass-matrix {run.mass_matrix} is qvr's own sampler's; the numpyro engine "
            "adapts Stan's diagonal (diag, auto) or dense metric"
        )
    if device != "cpu":
        return f"the numpyro engine runs on the CPU (--device {device} is qvr's sampler's)"
    return missing()


@dataclass(frozen=True)
class Resume:
    """qvr's chains as NumPyro goes on from them (`--engine auto`): each chain's
    unconstrained position by NumPyro's site names, its step size and its M^-1 (diagonal
    or matrix) in NumPyro's order of coordinates (the sites by name), qvr's warmup
    divergences and where qvr's chains started."""

    positions: dict[str, np.ndarray]  # (chains, ...) a site
    step_sizes: np.ndarray  # (chains,)
    inverse_metrics: np.ndarray  # (chains, d) or (chains, d, d)
    warmup_divergences: np.ndarray  # (chains,)
    starts: str = "pathfinder"  # `MCMCResult.starts`: `chains.HandedOver` says


@dataclass(frozen=True)
class Export:
    """The program's NumPyro export, run: its `model` and its `load_data` (None where the
    model reads no data)."""

    model: Callable[..., Any]
    load_data: Callable[[str], dict[str, Any]] | None


def exported(checked: CheckedModule, program: str, path: str | None = None) -> Export:
    """`program`'s NumPyro export, or an InferenceError with the export's own diagnostics
    (QVR701, located) when NumPyro cannot say the program."""
    result = export_program(checked, TARGETS["numpyro"], program)
    if result.text is None:
        shown = format_diagnostics(list(result.diagnostics), path)
        raise InferenceError(
            f"the numpyro engine runs the program's NumPyro export, which cannot be "
            f"written:\n{shown}\n(`qvr run` without --engine samples it with qvr's NUTS)"
        )
    namespace: dict[str, Any] = {"__name__": "qvr_numpyro_engine"}
    # the text is the export of the checked module, written by qvr_core.export: names
    # are the program's identifiers and values its literals, never text read as code
    exec(compile(result.text, f"<numpyro export of {program}>", "exec"), namespace)
    return Export(namespace["model"], namespace.get("load_data"))


def model_arguments(
    export: Export, data: Mapping[str, torch.Tensor], observations: Mapping[str, Observed]
) -> dict[str, Any]:
    """The export's keyword arguments, read by its own `load_data` (each value's type, and
    the data it computes, as the export declares them) from the values qvr read, written
    to a JSON file in a private temporary folder: the file `load_data` reads, whatever
    format the run's data came in."""
    if export.load_data is None:
        return {}
    raw: dict[str, Any] = {}
    for name, value in {**data, **observations}.items():
        if not isinstance(value, torch.Tensor):
            raise InferenceError(
                f"the numpyro engine takes `{name}` whole; a masked or padded value is "
                "qvr's sampler's"
            )
        raw[name] = value.detach().cpu().tolist()
    with tempfile.TemporaryDirectory(prefix="qvr-numpyro-") as folder:
        path = Path(folder) / "data.json"
        path.write_text(json.dumps(raw), encoding="utf-8")
        return export.load_data(str(path))


def _float64() -> None:
    """JAX in float64, as qvr computes (its default is float32)."""
    import jax

    jax.config.update("jax_enable_x64", True)  # type: ignore[no-untyped-call]  # untyped


def resume_from(
    export: Export,
    arguments: dict[str, Any],
    target: Any,
    x: Mapping[str, torch.Tensor],
    observations: Mapping[str, Observed],
    states: Sequence[ChainState],
) -> Resume | None:
    """qvr's chains `states` in NumPyro's coordinates, or None where they are not the same
    coordinates: NumPyro's latents must be qvr's sites, and each position, constrained by
    qvr and unconstrained again by NumPyro (`unconstrain_fn`), must come back as it was
    (the same map to the unconstrained space: else qvr's metric would not fit)."""
    from numpyro.infer.util import unconstrain_fn

    _float64()
    with torch.random.fork_rng():
        layout = chain_layout(target, dict(x), observations)
    where = {site.name: k for k, site in enumerate(layout.sites)}
    order = sorted(where)
    empty = [np.zeros(0, dtype=np.int64)]
    index = np.concatenate(
        [np.arange(*layout.offsets[where[n]], dtype=np.int64) for n in order] or empty
    )
    positions: dict[str, list[np.ndarray]] = {n: [] for n in order}
    metrics = []
    for state in states:
        z = state.chain.z
        with torch.no_grad():
            values, _ = layout.unpack(z)
        given = {k: np.asarray(v.detach().cpu().numpy()) for k, v in values.items()}
        unconstrained = unconstrain_fn(export.model, (), arguments, given)
        if sorted(unconstrained) != order:
            return None
        flat = np.concatenate([np.ravel(np.asarray(unconstrained[n])) for n in order])
        ours = z.detach().cpu().numpy()[index]
        if flat.shape != ours.shape or not np.allclose(flat, ours, rtol=1e-6, atol=1e-9):
            return None
        for n in order:
            positions[n].append(np.asarray(unconstrained[n]))
        inverse = state.chain.inv_mass.detach().cpu().numpy()
        metrics.append(inverse[index] if inverse.ndim == 1 else inverse[np.ix_(index, index)])
    kinds = {m.ndim for m in metrics}
    if len(kinds) != 1:  # some chains diagonal, some not: every one as a matrix
        metrics = [np.diag(m) if m.ndim == 1 else m for m in metrics]
    return Resume(
        positions={n: np.stack(v) for n, v in positions.items()},
        step_sizes=np.array([float(s.chain.step_size) for s in states]),
        inverse_metrics=np.stack(metrics),
        warmup_divergences=np.array([s.record.warmup_divergences for s in states]),
    )


#: `--engine auto` hands a run's draws to NumPyro where qvr's trees' own Python is
#: projected to cost more than this over the rest of them (`chains.projected_tree_seconds`):
#: several times what the hand-over costs, JAX's compile of the model (2 to 10 s on
#: posteriordb's) and the draws qvr made before it that are not kept.
HANDOVER_SECONDS = 20.0

log = logging.getLogger(__name__)


class Takeover:
    """`--engine auto`'s `hand_over` (`chains.run_chains`): after qvr's warmup and its
    first `chains.HANDOVER_DRAWS` draws, NumPyro's NUTS takes the chains on, with the
    positions, step sizes and metrics qvr adapted, where the rest of the draws' trees are
    projected to cost qvr's Python more than `HANDOVER_SECONDS` and NumPyro can run the
    program in qvr's coordinates (`resume_from`). Anything that stands in the way leaves
    the run on qvr's sampler: the hand-over only ever saves time."""

    def __init__(
        self,
        engine: Engine,
        target: Any,
        x: Mapping[str, torch.Tensor],
        observations: Mapping[str, Observed],
        num_samples: int,
    ) -> None:
        self.engine, self.target, self.x = engine, target, x
        self.observations, self.num_samples = observations, num_samples
        #: what NumPyro goes on with, once the chains are taken over
        self.export: Export | None = None
        self.resume: Resume | None = None

    def __call__(self, states: Sequence[ChainState]) -> bool:
        projected = projected_tree_seconds(states, self.num_samples)
        if projected < HANDOVER_SECONDS or missing():
            return False
        try:
            export = exported(self.engine.checked, self.engine.program, self.engine.path)
            arguments = model_arguments(export, self.x, self.observations)
            resume = resume_from(export, arguments, self.target, self.x, self.observations, states)
        except Exception as e:  # an export NumPyro cannot run: qvr's sampler goes on
            log.debug("the draws stay with qvr's sampler: %s", first_line(e))
            return False
        if resume is None:
            log.debug("the draws stay with qvr's sampler: NumPyro's coordinates are not qvr's")
            return False
        log.debug("NumPyro takes the draws on: qvr's trees projected at %.0f s", projected)
        self.export, self.resume = export, resume
        return True


def _resumed_state(state: Any, resume: Resume) -> Any:
    """NumPyro's initial chain `state` with qvr's step sizes and metrics in its adaptation
    state (NumPyro's own conversion of M^-1 to the momentum's factors), for a kernel that
    adapts neither."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer.hmc_util import _initialize_mass_matrix

    block = tuple(sorted(state.z))
    dense = [block] if resume.inverse_metrics.ndim == 3 else []
    first = {k: v[0] for k, v in state.z.items()}

    def factors(inverse: Any) -> Any:
        return _initialize_mass_matrix(first, {block: inverse}, dense)

    inverse, sqrt, sqrt_inverse = jax.vmap(factors)(jnp.asarray(resume.inverse_metrics))
    adapt = state.adapt_state._replace(
        step_size=jnp.asarray(resume.step_sizes),
        inverse_mass_matrix=inverse,
        mass_matrix_sqrt=sqrt,
        mass_matrix_sqrt_inv=sqrt_inverse,
    )
    return state._replace(adapt_state=adapt)


def _log_joint(
    model: Callable[..., Any], arguments: dict[str, Any], example: dict[str, Any]
) -> Callable[[Any], Any]:
    """The model's log joint at its latents' values (constants kept, no Jacobian), with its
    enumerated sites summed out as NumPyro's NUTS sums them (funsor, under `enum`), as
    qvr's log joint sums its `marginalize` scopes. `example`: one draw's latent values, at
    which the model is traced once to find its sites (an improper latent cannot be drawn)."""
    from numpyro.handlers import seed, substitute, trace
    from numpyro.infer.util import log_density

    traced = trace(substitute(seed(model, 0), data=example)).get_trace(**arguments)
    sites = list(traced.values())
    samples = [s for s in sites if s["type"] == "sample"]
    if not any(s.get("infer", {}).get("enumerate") for s in samples):
        return lambda params: log_density(model, (), arguments, params)[0]
    from numpyro.contrib.funsor import enum
    from numpyro.contrib.funsor import log_density as summed_log_density

    nesting = max((len(s.get("cond_indep_stack", ())) for s in samples), default=0)
    summed = enum(model, first_available_dim=-1 - nesting)
    return lambda params: summed_log_density(summed, (), arguments, params)[0]


#: Iterations a compiled call advances every chain by: between calls the run reports its
#: progress and draws and looks for a stop. Not one: a jitted call per iteration from
#: Python made gp_pois_regr's 4 x 2,000 iterations take 46 s where calls of 50 took 31 s,
#: as long as NumPyro's own `MCMC.run` (32 s), which loops inside one call.
BLOCK = 50


def _blocks(
    kernel: Any, arguments: dict[str, Any], chains: int
) -> Callable[[Any, int], tuple[Any, dict[str, Any]]]:
    """`advance(state, n)`: n <= BLOCK iterations of every chain in one compiled loop, with
    what each iteration left: the potential, divergence, leapfrog steps, energy, acceptance
    and step size per chain, and the unconstrained position."""
    from functools import partial

    import jax
    import jax.numpy as jnp

    step = partial(kernel.sample, model_args=(), model_kwargs=arguments)

    def record(s: Any) -> dict[str, Any]:
        return {
            "potential": s.potential_energy,
            "diverging": s.diverging,
            "steps": s.num_steps,
            "energy": s.energy,
            "accept": s.accept_prob,
            "step_size": jnp.broadcast_to(s.adapt_state.step_size, (chains,)),
            "z": s.z,
        }

    def advance(state: Any, n: Any) -> tuple[Any, dict[str, Any]]:
        empty = jax.tree.map(
            lambda v: jnp.zeros((BLOCK, *jnp.shape(v)), jnp.result_type(v)), record(state)
        )

        def body(i: Any, carry: tuple[Any, dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
            s, kept = carry
            s = step(s)
            return s, jax.tree.map(lambda k, v: k.at[i].set(v), kept, record(s))

        advanced: tuple[Any, dict[str, Any]] = jax.lax.fori_loop(0, n, body, (state, empty))
        return advanced

    return jax.jit(advance)


def sample(
    export: Export,
    target: Any,
    x: Mapping[str, torch.Tensor],
    observations: Mapping[str, Observed],
    run: EngineRun,
    *,
    on_step: Callable[[int, float], None],
    on_draw: Callable[[int, ChainDraw], None] | None,
    should_stop: Callable[[], bool] | None,
    resume: Resume | None = None,
) -> MCMCResult:
    """NUTS on `export` (of `target`'s program), its draws under `target`'s site names.

    `on_step(chain, potential)` after every iteration of every chain; `on_draw(chain,
    draw)` for every draw past warmup. When `should_stop()` turns true the result holds
    the draws so far, `stopped` set. With `resume` the chains go on from qvr's, with their
    step sizes and metrics, adapting neither (`run.num_warmup` is then 0)."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import NUTS, init_to_sample, init_to_uniform

    _float64()
    with torch.random.fork_rng():  # the layout's forward draw leaves the stream alone
        layout = chain_layout(target, dict(x), observations)
    model = export.model
    arguments = model_arguments(export, x, observations)
    keys = jax.random.split(jax.random.PRNGKey(run.seed), run.chains)
    if resume is None:
        kernel = NUTS(
            model,
            target_accept_prob=run.target_accept,
            max_tree_depth=run.max_tree_depth,
            dense_mass=METRICS[run.mass_matrix] == "dense",
            init_strategy=init_to_sample if run.init == "prior" else init_to_uniform,
        )
        try:
            state = kernel.init(keys, run.num_warmup, model_kwargs=arguments)
        except RuntimeError as e:  # NumPyro's "Cannot find valid initial parameters"
            raise InferenceError(f"the numpyro engine could not start its chains: {e}") from None
    else:
        kernel = NUTS(
            model,
            max_tree_depth=run.max_tree_depth,
            dense_mass=resume.inverse_metrics.ndim == 3,
            adapt_step_size=False,
            adapt_mass_matrix=False,
        )
        init = {k: jnp.asarray(v) for k, v in resume.positions.items()}
        state = kernel.init(keys, 0, init_params=init, model_kwargs=arguments)
        state = _resumed_state(state, resume)
    names = [site.name for site in layout.sites]
    # what the log joint is scored at: every latent NumPyro moves (an export may have more
    # than qvr's sites) and qvr's sites (its deterministic values included)
    scored = set(names) | set(state.z)
    advance = _blocks(kernel, arguments, run.chains)
    constrain = jax.jit(jax.vmap(jax.vmap(kernel.postprocess_fn((), arguments))))

    #: each block's draws past warmup: every scored site and the sampler's statistics,
    #: (iterations, chains, ...) each
    parts: list[dict[str, np.ndarray]] = []
    warmup_divergences = np.zeros(run.chains, dtype=np.int64)
    if resume is not None:
        warmup_divergences += resume.warmup_divergences
    stopped, done, total = False, 0, run.num_warmup + run.num_samples
    while done < total:
        if should_stop is not None and should_stop():
            stopped = True
            break
        n = min(BLOCK, total - done)
        state, block = advance(state, n)
        got = {k: np.asarray(v)[:n] for k, v in block.items() if k != "z"}
        for i in range(n):
            for c in range(run.chains):
                on_step(c, float(got["potential"][i, c]))
        warm = max(0, min(n, run.num_warmup - done))
        warmup_divergences += got["diverging"][:warm].sum(axis=0)
        done += n
        if warm == n:
            continue
        # the whole block, one shape: a slice of it would compile again at each size
        whole = constrain(block["z"])
        part = {k: np.asarray(v)[warm:n] for k, v in whole.items() if k in scored}
        part.update({k: v[warm:] for k, v in got.items() if k != "potential"})
        part["depth"] = np.ceil(np.log2(part["steps"] + 1)).astype(np.int64)
        parts.append(part)
        if on_draw is not None:
            for i in range(n - warm):
                for c in range(run.chains):
                    one = {k: part[k][i, c].astype(np.float64) for k in names if k in part}
                    flags = bool(part["diverging"][i, c]), int(part["depth"][i, c])
                    on_draw(c, ChainDraw(one, *flags, float(part["energy"][i, c])))

    missing_sites = [n for n in names if parts and n not in parts[0]]
    if missing_sites:
        raise InferenceError(
            f"the NumPyro export names no site {', '.join(missing_sites)}: the numpyro "
            "engine cannot read its draws back (a bug of the export; run without --engine)"
        )
    # (chains, draws, ...): NumPyro's shape of each site, then qvr's for the same values
    joined = (
        {k: np.concatenate([p[k] for p in parts]).swapaxes(0, 1) for k in parts[0]} if parts else {}
    )
    draws = int(joined["steps"].shape[1]) if parts else 0
    samples = {
        site.name: torch.from_numpy(
            np.ascontiguousarray(joined[site.name]).reshape(run.chains, draws, *site.shape)
            if parts
            else np.zeros((run.chains, 0, *site.shape))
        )
        for site in layout.sites
    }

    if parts:  # the model's log joint at each draw, as NumPyro scores its own sites
        flat = {
            n: jnp.asarray(v.reshape(-1, *v.shape[2:])) for n, v in joined.items() if n in state.z
        }
        example = {n: v[0] for n, v in flat.items()}
        joints = np.asarray(jax.jit(jax.vmap(_log_joint(model, arguments, example)))(flat))
        log_densities = torch.from_numpy(joints.reshape(run.chains, draws).copy())
    else:
        log_densities = torch.zeros(run.chains, 0, dtype=torch.float64)

    def per_chain(key: str, dtype: torch.dtype) -> torch.Tensor:
        if not parts:
            return torch.zeros(run.chains, 0, dtype=dtype)
        return torch.from_numpy(np.ascontiguousarray(joined[key])).to(dtype)

    step_sizes = joined["step_size"][:, -1] if parts else np.full(run.chains, math.nan)
    result = MCMCResult(
        samples=samples,
        log_densities=log_densities,
        acceptance_rates=per_chain("accept", torch.float64).mean(dim=1),
        divergence_counts=per_chain("diverging", torch.int64).sum(dim=1),
        step_sizes=torch.from_numpy(np.asarray(step_sizes, dtype=np.float64)),
        tree_depths=per_chain("depth", torch.int64),
        num_leapfrog_steps=per_chain("steps", torch.int64),
        warmup_divergence_counts=torch.from_numpy(warmup_divergences),
        energies=per_chain("energy", torch.float64),
        diverging=per_chain("diverging", torch.bool),
        seeds=[run.seed],
        starts=(
            resume.starts
            if resume is not None
            else "prior"
            if run.init == "prior"
            else UNIFORM_STARTS
        ),
        stopped=stopped,
        coordinates=layout.size,
    )
    return diagnosed(result)
