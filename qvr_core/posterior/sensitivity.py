"""How much a run's posterior moves when its prior or its likelihood is power-scaled.

Power-scaling sensitivity (Kallioinen, Paananen, Buerkner and Vehtari 2023, the
priorsense package) raises the prior (or the likelihood) to a power near 1 and
measures how far each parameter's posterior moves, from the draws alone: the
scaled posterior is the run's draws reweighted by Pareto-smoothed importance
sampling, so nothing is refitted. ArviZ computes it (`az.psens`) from the run's
`log_prior` group (each latent site's prior log-density per draw, which `qvr run
--output` writes for NUTS and SVI) and its `log_likelihood` group; this module
reads both from a run file, labels each parameter's elements as the run summary
does, and gives priorsense's diagnosis with what to do about it.

Which priors are scaled: by default the top-level ones, those that read no other
latent (`mu` and `tau` of eight schools, not `theta ~ Normal(mu, tau)`), as the
method's authors advise for hierarchical models, where the lower levels are the
model's structure rather than prior knowledge; a model program's run names them
(`attrs["log_prior_top_level"]`). `priors="all"` scales every prior term, or a list
of sites. Diagnoses:

- prior sensitivity >= 0.05 and likelihood sensitivity >= 0.05: a possible
  prior-data conflict (the prior and the data pull the parameter apart);
- prior sensitivity > 0.05 > likelihood sensitivity: a strong prior or a weak
  likelihood (the data say little about it, the prior decides);
- otherwise nothing to report.

The numbers are priorsense's. Its sensitivity of a parameter is the cumulative
Jensen-Shannon distance (the metric, the larger of the draws' and their negatives'
directions) between the draws' ECDF and their importance-weighted ECDF at the powers
0.99 and 1.01, summed and divided by twice log2(1.01), the weights Pareto-smoothed.
`az.psens` computes the same with three small differences: its lower power is 1/1.01,
not 0.99; its smoothing takes the relative efficiency as 1, where priorsense reads it
from the log ratios' tail ESS; it clamps each direction of the divergence at 0.
Measured on exact posterior draws of priorsense's two examples and on NUTS runs of
its normal one (4,000 draws each), they make ArviZ's values lower by 0.005 at most (1
per cent), well under the values' Monte Carlo error (a standard deviation of 0.04 to
0.1 between runs of that example), so we keep ArviZ's maintained code rather than a
copy of priorsense's (`tests/posterior/test_sensitivity.py` checks the two agree
within 0.01 on the same draws).

Monte Carlo error: the values are estimates from the draws, and noisy ones. The
divergence is normalised by its integral over the draws' range, so a value moves with
a run's extreme draws: over 160 NUTS runs of 4,000 draws of priorsense's normal
example, mu's prior sensitivity had median 0.38 and its middle 90 per cent 0.34 to
0.47, and a run whose chains crossed the posterior's long tail gave 4.5 times as
much; from 200 draws (`qvr run`'s default steps) the middle 90 per cent was 0.30 to
0.59. The value depends on the number of draws through that range too, so the number
is reported (`Sensitivity.draws`), and runs, or a run and priorsense's printed
numbers, compare only at equal draws (priorsense's examples: 4 chains of 1,000).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData
from qvr_core.posterior.run_files import RunFileError
from qvr_core.text.units import element_label

#: priorsense's threshold on either sensitivity.
THRESHOLD = 0.05
CONFLICT = "prior-data conflict"
STRONG_PRIOR = "strong prior / weak likelihood"
REMEDIES = {
    CONFLICT: (
        "the prior and the data pull this parameter apart: check that the prior says what "
        "you know (its centre, its scale) and that the data are what you think; widen the "
        "prior if it was meant to be weak"
    ),
    STRONG_PRIOR: (
        "the data say little about this parameter, so its prior decides its posterior: "
        "give a prior you can defend, or more data that inform it"
    ),
}


@dataclass(frozen=True)
class Row:
    """One element of a parameter: its sensitivities and the diagnosis ("" when none)."""

    site: str
    index: list[int]
    label: str
    prior: float
    likelihood: float
    diagnosis: str


@dataclass
class Sensitivity:
    rows: list[Row] = field(default_factory=list)
    threshold: float = THRESHOLD
    priors: list[str] = field(default_factory=list)  # the prior terms scaled
    note: str = ""  # how they were chosen, when not the run's top-level priors
    draws: int = 0  # the draws the values are estimated from (chains times draws)
    chains: int = 0

    @property
    def flagged(self) -> list[Row]:
        return [r for r in self.rows if r.diagnosis]

    def to_json(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "priors": self.priors,
            "note": self.note or None,
            "draws": self.draws,
            "chains": self.chains,
            "rows": [
                {
                    "site": r.site,
                    "index": r.index,
                    "label": r.label,
                    "prior": _finite(r.prior),
                    "likelihood": _finite(r.likelihood),
                    "diagnosis": r.diagnosis or None,
                }
                for r in self.rows
            ],
            "remedies": {d: REMEDIES[d] for d in sorted({r.diagnosis for r in self.flagged})},
        }


def diagnose(prior: float, likelihood: float, threshold: float = THRESHOLD) -> str:
    """priorsense's diagnosis of one element ("" when there is nothing to report)."""
    if prior >= threshold and likelihood >= threshold:
        return CONFLICT
    if prior > threshold > likelihood:
        return STRONG_PRIOR
    return ""


def sensitivity(idata: InferenceData, name: str, priors: str | list[str] = "top") -> Sensitivity:
    """The power-scaling sensitivity of each posterior element of the run `idata`
    (`name` for errors) to its `priors` ("top", "all" or sites; see the module) and its
    likelihood; `RunFileError` when the run lacks what it needs."""
    groups = set(arviz_adapter.groups(idata))
    for group, why in (
        ("posterior", "no posterior"),
        ("log_prior", "no log_prior group (each latent site's prior log-density)"),
        ("log_likelihood", "no log_likelihood group"),
    ):
        if group not in groups or not idata[group].data_vars:
            skipped = str(idata.posterior.attrs.get(group, "")) if "posterior" in groups else ""
            said = f" (the run skipped it: {skipped.removeprefix('skipped: ')})" if skipped else ""
            raise RunFileError(
                name,
                f"has {why}{said}: rerun with qvr run --output (--method nuts or svi keeps it)",
            )
    draws = idata.posterior.sizes.get("draw", 0) * idata.posterior.sizes.get("chain", 0)
    if draws < 2:
        raise RunFileError(name, "has fewer than 2 draws: nothing to reweight")
    names = [
        str(v) for v, x in idata.posterior.data_vars.items() if np.issubdtype(x.dtype, np.floating)
    ]
    if not names:
        raise RunFileError(name, "has no real-valued posterior variable")
    chosen, note = _priors(idata, name, priors)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # ArviZ's notes on Pareto k: read in the numbers
            scaled = {
                "prior": arviz_adapter.psens(
                    idata, component="prior", component_var_names=chosen, var_names=names
                ),
                "likelihood": arviz_adapter.psens(idata, component="likelihood", var_names=names),
            }
    except Exception as e:  # a group ArviZ cannot read: its own words, on one line
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RunFileError(name, f"ArviZ cannot compute its sensitivity ({why})") from None
    chains = int(idata.posterior.sizes.get("chain", 0))
    out = Sensitivity(priors=chosen, note=note, draws=draws, chains=chains)
    for site in names:
        prior = _values(scaled["prior"], site)
        likelihood = _values(scaled["likelihood"], site)
        shape = tuple(prior.shape)
        for i, (p, lk) in enumerate(zip(prior.ravel(), likelihood.ravel(), strict=True)):
            index, label = element_label(site, shape, i)
            out.rows.append(Row(site, index, label, float(p), float(lk), diagnose(p, lk)))
    return out


def _priors(idata: InferenceData, name: str, priors: str | list[str]) -> tuple[list[str], str]:
    """The prior terms to scale, and a note when they are not the run's top-level ones."""
    terms = [str(v) for v in idata.log_prior.data_vars]
    if isinstance(priors, list):
        unknown = [p for p in priors if p not in terms]
        if unknown or not priors:
            raise RunFileError(
                name,
                f"has no prior term of {', '.join(unknown) or 'nothing'}; its: {', '.join(terms)}",
            )
        return priors, "the priors asked for"
    if priors == "all":
        return terms, "every prior term, the hierarchy's too"
    top = idata.log_prior.attrs.get("log_prior_top_level")
    if top is None:
        return terms, "every prior term (the run does not say which are top-level)"
    chosen = [t for t in str(top).split() if t in terms]
    return (chosen, "") if chosen else (terms, "every prior term (none is top-level)")


def _values(result: Any, site: str) -> np.ndarray:
    """One variable's sensitivities from `az.psens`'s answer (a Dataset, or the variable
    itself when it was the only one)."""
    found = result[site] if hasattr(result, "data_vars") else result
    return np.asarray(found.values, dtype=float)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
