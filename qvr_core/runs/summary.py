"""What one run produced, typed: `RunSummary`, and its JSON form (`to_json`).

The JSON form is what `qvr run --json` prints, what the language server's
worker sends in its `result` event and what the editor's run view reads; its
keys and their order are part of that protocol. NaN stays NaN there: the
callers' JSON writers turn it into null.

A stopped run (`stopped`) is partial: `stopped_after` says how far it got ("stopped
after 120 of 500 draws per chain"), `run_attributes` is what its results file
says of it (`status` "partial" or "complete").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from qvr_core.inference.summary import FitWarning, Summary

Method = Literal["svi", "nuts", "prior"]


def finite(v: float) -> float | None:
    """`v`, or None when it is NaN or infinite."""
    return v if math.isfinite(v) else None


@dataclass(frozen=True)
class SviFit:
    """What an SVI run was asked for besides the steps."""

    lr: float
    guide: str
    subsample: tuple[str, int] | None = None  # (plate, rows scored per step)
    processes: int = 1  # processes sharing each step (`runs.distributed`)
    elbo_sd: float | None = None  # sd of the -ELBO estimate at the fit (`methods.elbo_sd`)
    elbo_evaluations: int = 0  # evaluations the sd is measured over


@dataclass(frozen=True)
class NutsStats:
    """The sampler's statistics over every chain (None where a number is not finite)."""

    chains: int  # chains that produced draws
    chains_requested: int
    processes: int  # the processes the chains ran in
    num_warmup: int
    num_samples: int  # draws per chain after warmup
    acceptance: float | None
    divergences: int  # after warmup
    warmup_divergences: int
    step_size: float | None
    r_hat: Mapping[str, float | None]  # worst R-hat per site
    ess: Mapping[str, float | None]  # least bulk ESS per site
    traces: tuple[tuple[float, ...], ...]  # every chain's potential energy, warmup included
    #: the metric adapted in warmup (`run_arguments.MASS_MATRICES`, `auto` resolved)
    mass_matrix: str = "diag"
    #: where the chains started (`MCMCResult.starts`)
    starts: str = "prior"
    #: the acceptance warmup tuned the step size to (`RunArguments.target_accept`)
    target_accept: float = 0.8
    #: what ran the chains: `qvr`, `numpyro`, or `qvr+numpyro` (qvr's warmup, NumPyro's
    #: draws: `--engine auto`'s hand-over)
    engine: str = "qvr"

    @property
    def r_hat_max(self) -> float | None:
        return max((v for v in self.r_hat.values() if v is not None), default=None)

    @property
    def ess_min(self) -> float | None:
        return min((v for v in self.ess.values() if v is not None), default=None)


@dataclass(frozen=True)
class Frequency:
    """How often a discrete site took `value` over the prior draws."""

    value: int
    fraction: float


@dataclass(frozen=True)
class SiteDraws:
    """A site's prior draws in a few numbers: moments and range of a continuous value,
    the most frequent values of a discrete one."""

    kind: str
    support: str
    shape: tuple[int, ...]
    mean: float | None = None
    sd: float | None = None
    min: float | None = None
    max: float | None = None
    most_frequent: tuple[Frequency, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "support": self.support, "shape": [*self.shape]}
        if self.most_frequent is None:
            out.update(mean=self.mean, sd=self.sd, min=self.min, max=self.max)
        else:
            out["most_frequent"] = [
                {"value": f.value, "fraction": f.fraction} for f in self.most_frequent
            ]
        return out


@dataclass(frozen=True)
class AttentionWeights:
    """One attention module's weights for the first example (`runs.attention_record`):
    `weights[h][q][k]`, how much query position q of head h looked at key position k.

    `queries` and `keys` are the example's real lengths (padding cut off); `weights`
    holds at most the first `MAX_HEADS` heads and `MAX_POSITIONS` positions of each
    axis. `tokens`, when the input is discrete and the attention runs over its
    positions, is the input at each shown position, as text.
    """

    label: str  # "self_attention in encoder_block 1 of 2"
    site: str  # the program and step that apply it: "encoder_block.a"
    combinator: str  # "multihead(w_q, w_k, w_v)"
    kind: str  # "self", "causal" or "cross"
    heads: int  # the module's heads, shown or not
    queries: int
    keys: int
    basis: str  # what the weights were computed under (the method's choice)
    weights: tuple[tuple[tuple[float, ...], ...], ...]
    tokens: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """Weights to 4 decimals: a view cannot show more, and the JSON stays small."""
        return {
            "label": self.label,
            "site": self.site,
            "combinator": self.combinator,
            "kind": self.kind,
            "example": 0,
            "basis": self.basis,
            "heads": self.heads,
            "queries": self.queries,
            "keys": self.keys,
            "tokens": None if self.tokens is None else list(self.tokens),
            "weights": [[[round(w, 4) for w in row] for row in head] for head in self.weights],
        }


@dataclass(frozen=True)
class RunSummary:
    """One run of `program` by `method`: the loss series (SVI's -ELBO, NUTS's first chain's
    potential energy, the prior draws' -log joint), the posterior table with its warnings,
    what only one method has (`svi`, `nuts`, `sites`) and, for a program with attention,
    the weights of its first example (`attention`)."""

    method: Method
    program: str
    data: str  # "synthetic", or the data file's name
    batch: int
    steps: int  # SVI steps, NUTS iterations over every chain, prior draws
    losses: tuple[float, ...]
    seconds: float
    stopped: bool  # asked to stop, or stopped by a non-finite loss
    posterior: Summary | None = None  # SVI: the guide's draws; NUTS: the chains'
    svi: SviFit | None = None
    nuts: NutsStats | None = None
    sites: Mapping[str, SiteDraws] | None = None  # prior: every site's draws
    attention: tuple[AttentionWeights, ...] = ()  # each attention's, for the first example
    redrawn: int = 0  # prior: forward runs set aside, their numbers past float64
    device: str = "cpu"  # where it computed (`runs.device`)

    @property
    def warnings(self) -> tuple[FitWarning, ...]:
        """Reasons not to trust the fit (convergence, divergences, tree depth, E-BFMI)."""
        return () if self.posterior is None else tuple(self.posterior.warnings)

    @property
    def initial_loss(self) -> float | None:
        return self.losses[0] if self.losses else None

    @property
    def final_loss(self) -> float | None:
        return self.losses[-1] if self.losses else None

    @property
    def steps_per_second(self) -> float | None:
        return self.steps / self.seconds if self.seconds > 0 else None

    def to_json(self) -> dict[str, Any]:
        """The summary as `qvr run --json` prints it and the worker sends it."""
        out: dict[str, Any] = {
            "method": self.method,
            "program": self.program,
            "data": self.data,
            "batch": self.batch,
            "steps": self.steps,
            "device": self.device,
        }
        if self.svi is not None:
            out.update(lr=self.svi.lr, guide=self.svi.guide)
            if self.svi.subsample is not None:
                plate, rows = self.svi.subsample
                out["subsample"] = {"plate": plate, "rows": rows}
                sd = self.svi.elbo_sd
                out["elbo_sd"] = None if sd is None else finite(sd)
                out["elbo_evaluations"] = self.svi.elbo_evaluations
            if self.svi.processes > 1:
                out["processes"] = self.svi.processes
            out.update(self._loss_json())
            out["posterior"] = self._posterior_json()
        elif self.nuts is not None:
            n = self.nuts
            out.update(
                chains=n.chains,
                chains_requested=n.chains_requested,
                processes=n.processes,
                num_warmup=n.num_warmup,
                num_samples=n.num_samples,
                acceptance=n.acceptance,
                target_accept=n.target_accept,
                divergences=n.divergences,
                warmup_divergences=n.warmup_divergences,
                step_size=n.step_size,
                mass_matrix=n.mass_matrix,
                starts=n.starts,
                engine=n.engine,
                r_hat=dict(n.r_hat),
                ess=dict(n.ess),
                r_hat_max=n.r_hat_max,
                ess_min=n.ess_min,
                posterior=self._posterior_json(),
            )
            out.update(self._loss_json())
            out["traces"] = [list(t) for t in n.traces]
        else:
            out["sites"] = {k: v.to_json() for k, v in (self.sites or {}).items()}
            out["redrawn"] = self.redrawn
            out.update(self._loss_json())
        if self.attention:
            out["attention"] = [a.to_json() for a in self.attention]
        out["stopped"] = self.stopped
        return out

    def _loss_json(self) -> dict[str, Any]:
        return {
            "initial_loss": self.initial_loss,
            "final_loss": self.final_loss,
            "losses": list(self.losses),
            "seconds": self.seconds,
            "steps_per_second": self.steps_per_second,
        }

    def _posterior_json(self) -> dict[str, Any] | None:
        return None if self.posterior is None else self.posterior.to_dict()


def stopped_after(s: RunSummary, requested: int) -> str:
    """`stopped after 120 of 500 draws per chain`: how far a stopped run got."""
    if s.nuts is not None:
        n = s.nuts
        wanted = max(requested - requested // 2, 1)
        if n.num_samples == 0:
            return (
                f"stopped during warmup after {s.steps} of "
                f"{n.chains_requested * requested} iterations: no draws"
            )
        chains = (
            ""
            if n.chains == n.chains_requested
            else f" ({n.chains} of {n.chains_requested} chains)"
        )
        return f"stopped after {n.num_samples} of {wanted} draws per chain{chains}"
    unit = "steps" if s.method == "svi" else "draws"
    return f"stopped after {s.steps} of {requested} {unit}"


def run_attributes(s: RunSummary, requested: int) -> dict[str, str | int]:
    """What `--output` says of the run as a whole: `status` ("complete" or "partial"),
    `partial` (1 or 0), the steps done and asked for, and NUTS's draws per chain."""
    out: dict[str, str | int] = {
        "status": "partial" if s.stopped else "complete",
        "partial": int(s.stopped),
        "method": s.method,
        "steps": s.steps,
        "steps_requested": requested,
    }
    if s.nuts is not None:
        out["steps_requested"] = requested * s.nuts.chains_requested
        out["draws"] = s.nuts.num_samples
        out["draws_requested"] = max(requested - requested // 2, 1)
        out["chains"] = s.nuts.chains
    if s.stopped:
        out["stopped"] = stopped_after(s, requested)
    return out
