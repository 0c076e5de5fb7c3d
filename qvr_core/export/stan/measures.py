"""A step of quivers' measure algebra in Stan: a truncation, `y ~ normal(mu, s) T[0, ];`.

Stan truncates one distribution by its CDF (`T[low, high]`, either end left out), as qvr
rescales a restriction at a step, and declares a parameter within the interval. It has
no statement for a mixture of distributions (its `log_mix` is a sum written per value),
a point mass or a distribution pushed through a bijection: those are refused, naming the
construct (`export/measures.py` says what every target refuses alike).
"""

from __future__ import annotations

from dataclasses import replace

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Site
from qvr_core.export.measures import Cut, written_form
from qvr_core.export.plan import Unsupported
from qvr_core.export.stan.families import STAN_FAMILIES, StanFamily
from qvr_core.export.stan.lower_env import Env

#: The parameters a truncation's ends are bound to (`Restrict`'s and `Truncated`'s).
ENDS = ("low", "high")


#: What Stan writes of each operator of the measure algebra (docs/export.md's table).
WRITES: dict[str, str] = {
    "restrict": "a continuous family, at a step",
    "truncated": "a continuous family, at a step",
    "rescaled": "of a truncation",
}


def truncated_site(env: Env, site: Site) -> tuple[Site, StanFamily] | None:
    """The site as its truncated family's (the family's arguments, then the ends) with
    Stan's distribution of that family truncated; None, with the problem, otherwise."""
    assert site.measure is not None
    form = written_form(site.measure)
    if isinstance(form, Unsupported):
        env.no(form.span, form.message)
        return None
    if not isinstance(form, Cut):
        env.no(
            site.step.span,
            "Stan writes a truncated family (T[low, high]) of quivers' measure algebra, not a "
            "mixture of distributions, a point mass or a pushforward: where a registry "
            "family is the same distribution, write it (MixtureNormal, LogNormal)",
        )
        return None
    leaf = form.base
    spec = STAN_FAMILIES.get(leaf.family)
    if spec is None or spec.half or spec.flat or spec.truncation or spec.over_ints:
        env.no(leaf.span, f"Stan has no {leaf.family} of the same density to truncate")
        return None
    if FAMILIES[leaf.family].discrete:
        env.no(leaf.span, f"a truncated {leaf.family}: the export truncates continuous families")
        return None
    ends = tuple(a for a in (form.low, form.high) if a is not None)
    return replace(site, family=leaf.family, args=(*leaf.args, *ends)), replace(
        spec, truncation=ENDS
    )


__all__ = ["ENDS", "WRITES", "truncated_site"]
