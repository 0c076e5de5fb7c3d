"""What PyMC cannot say of a plan, each at its span (QVR701 problems).

Each problem names the construct and why, so `qvr check --target pymc` and the editor
show it where it is written; nothing is ever written approximately instead: a family
PyMC lacks or has with another support, a random variable inside a summed scope, a
reduction other than the runtime's log-sum-exp, a size nothing gives.
"""

from __future__ import annotations

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Let, Site, walk
from qvr_core.check.terms import Call, Comprehension, Fold, Term, subterms
from qvr_core.export.densities import density_problem
from qvr_core.export.plan import NOT_EXPORTED_FACTOR, NOT_EXPORTED_FOLD, Unsupported
from qvr_core.export.pymc.context import Context, summed_name
from qvr_core.export.pymc.families import PYMC_FAMILIES, SUMMED, WHY_NOT, family_call
from qvr_core.export.pymc.measures import measure_problems
from qvr_core.export.pymc.terms import FUNCTIONS, NOT_WRITTEN


def problems(cx: Context) -> list[Unsupported]:
    """Every construct of the plan PyMC cannot be written for, at its span."""
    out: list[Unsupported] = []
    for plate in cx.plan.plates.values():
        if plate.size is None and cx.data_axis(plate.name) is None:
            out.append(
                Unsupported(
                    cx.model.decl.name.span,
                    f"the size of {plate.name} is known only at fit time, and no data "
                    "variable runs over it to give it",
                )
            )
    for node in walk(cx.tree):
        step = node.step
        if isinstance(step, Let):
            out.extend(_term_problems(step.term))
        elif step.kind == "marginalize":
            out.extend(_scope_problems(cx, step))
        else:
            out.extend(_site_problems(cx, step))
    return out


def _term_problems(term: Term) -> list[Unsupported]:
    out: list[Unsupported] = []
    for t in subterms(term):
        if isinstance(t, Call) and t.density is not None:
            why = density_problem(t, family_call, "PyMC")
            out += [] if why is None else [Unsupported(t.span, why)]
        elif isinstance(t, Call) and t.fn not in FUNCTIONS:
            out.append(Unsupported(t.span, NOT_WRITTEN.get(t.fn, f"PyTensor has no `{t.fn}`")))
        elif isinstance(t, Comprehension):
            out.append(Unsupported(t.span, NOT_EXPORTED_FACTOR))
        elif isinstance(t, Fold):
            out.append(Unsupported(t.span, NOT_EXPORTED_FOLD))
    return out


def _site_problems(cx: Context, site: Site) -> list[Unsupported]:
    assert site.family is not None
    if site.measure is not None:  # quivers' measure algebra, in a scope too: measures.py
        return measure_problems(site)
    if site.family not in PYMC_FAMILIES:
        why = WHY_NOT.get(site.family, f"PyMC has no {site.family} distribution")
        return [Unsupported(site.step.span, f"{site.family}: {why}")]
    if site.kind == "sample" and site.scope:
        return [
            Unsupported(
                site.step.span,
                f"a random variable inside `marginalize {site.scope[-1]}` takes a value "
                "for each value summed out, which a PyMC model cannot hold; observe it, "
                "or draw it outside the scope",
            )
        ]
    out = []
    family = FAMILIES[site.family]
    for a in site.args:
        param = family.param(a.param)
        vector = param is not None and param.rank == 1
        if vector and cx.scalar(a) and cx.event_size(site) is None:
            out.append(
                Unsupported(
                    a.span,
                    f"a number for the vector {a.param} of {site.family} needs the "
                    "size of one draw: give `over=` or the annotation",
                )
            )
    return out


def _scope_problems(cx: Context, site: Site) -> list[Unsupported]:
    assert site.family is not None
    out = []
    summed = summed_name(site)
    if summed not in SUMMED:
        out.append(
            Unsupported(
                site.step.span,
                f"summing out a {site.family} is written here for Categorical, "
                "Bernoulli and Binomial scopes only",
            )
        )
    elif cx.values(site) is None:
        out.append(Unsupported(site.step.span, f"the number of values of {site.name} is not known"))
    if not site.sums_exactly:
        out.append(
            Unsupported(
                site.step.span,
                f"reduction={site.reduction}: qvr's runtime sums every scope out by "
                "logsumexp, and an export would not say what this says",
            )
        )
    for inner in cx.model.sites:
        mapped = inner.via is not None and inner.scope and inner.scope[-1] == site.name
        if mapped and len(cx.dims(site.plates)) != 1:
            out.append(
                Unsupported(
                    inner.step.span,
                    "`via` maps rows into the groups of a marginalize over one plate",
                )
            )
    return out


# ------------------------------------------------------------ shapes


__all__ = ["problems"]
