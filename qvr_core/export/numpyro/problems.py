"""What NumPyro cannot say with qvr's meaning, each located at its construct (QVR701).

Asked before any tree is built (`lower.lower`): a plan with a problem is never
written, so nothing reaches a file that `qvr check --target numpyro` would refuse.
Each message says why in one sentence and, where there is one, what to write
instead. The order is the lowering's walk: the plates' sizes, each step in turn,
a read of an observation before its observe, then what enumeration needs.
"""

from __future__ import annotations

from qvr_core.builtins import Family
from qvr_core.check.model import Argument, Let, Model, Site, Step
from qvr_core.export.numpyro.analysis import Analysis, draw_size, frames, reached
from qvr_core.export.numpyro.families import (
    CALLS,
    ENUMERABLE,
    OBSERVED_ONLY,
    family_call,
    sized,
)
from qvr_core.export.numpyro.measures import measure_problems
from qvr_core.export.plan import Unsupported
from qvr_core.text.span import Span


def problems(m: Analysis) -> list[Unsupported]:
    """Every problem of the analysed plan, in the order the export reports them."""
    model = m.plan.model
    out = list(m.unsized)
    for step in model.steps:
        out += _step_problems(m, step)
    out += _early_reads(model)
    if m.enumerated:
        out += _enumeration_problems(m)
    return out


def _early_reads(model: Model) -> list[Unsupported]:
    """A step that reads an observed let between the let and its observe: the model takes
    the observation as its keyword (computed by `load_data`, None to draw it), which is
    no value before the observe draws it."""
    out: list[Unsupported] = []
    for name in model.observed_lets:
        between = False
        for step in model.steps:
            if isinstance(step, Let) and step.name == name:
                between = True
            elif isinstance(step, Site) and step.name == name:
                break
            elif between and name in step.reads():
                out.append(
                    Unsupported(
                        step.step.span,
                        f"reads `{name}` before its observe: the NumPyro model is given the "
                        "observation (or draws it) there; read it after the observe",
                    )
                )
    return out


def _step_problems(m: Analysis, step: Step) -> list[Unsupported]:
    if isinstance(step, Let):
        out = m.terms.problems(step.term)
        if step.kind == "score" and m.terms.depends(step.term):
            out.append(
                Unsupported(
                    step.step.span,
                    "a score that depends on a summed-out site: NumPyro's factor would "
                    "not be summed with the scope; write it as an observe",
                )
            )
        return out
    return _site_problems(m, step)


def _one_entry(span: Span, plate: str) -> Unsupported:
    return Unsupported(
        span,
        f"an index into {plate}, which has one entry: qvr gives a one-entry plate no axis "
        "and reads the index against one put back; index it with the plate itself",
    )


def _site_problems(m: Analysis, site: Site) -> list[Unsupported]:
    span = site.step.span
    if site.measure is not None and (site.kind == "sample" or site.via) and site.scope:
        return [
            Unsupported(
                span,
                f"a distribution built from distributions inside `marginalize "
                f"{site.scope[-1]}`, drawn or mapped by `via`: the export writes it observed "
                "over the scope's plate only",
            )
        ]
    if site.measure is not None:  # quivers' measure algebra: measures.py
        return measure_problems(site)
    family = site.summed_family
    if family is None:
        return [Unsupported(span, f"`{site.family}` is no family NumPyro's export knows")]
    out: list[Unsupported] = []
    if family.name not in CALLS:
        out.append(Unsupported(span, _missing(family)))
        return out
    if site.kind == "sample" and family.name in OBSERVED_ONLY:
        out.append(Unsupported(span, OBSERVED_ONLY[family.name]))
    enumerated = site.name in m.enumerated
    if enumerated and family.name not in ENUMERABLE:
        out.append(
            Unsupported(
                span,
                f"a summed-out {family.name}: NumPyro's enumeration is exported for "
                f"{' and '.join(ENUMERABLE)} sites; observe it, or use one of those",
            )
        )
    if site.kind == "sample" and family.discrete and not family.support.finite:
        out.append(
            Unsupported(
                span,
                f"a latent {family.name} has infinitely many values, which NUTS cannot "
                "move nor enumeration sum; observe it",
            )
        )
    if site.kind == "sample" and site.scope:
        what = "discrete site" if enumerated else "latent site"
        out.append(
            Unsupported(
                span,
                f"a {what} inside `marginalize {site.scope[-1]}`: its value would depend on "
                "the summed-out site, which NUTS cannot hold; move it before the scope",
            )
        )
    if site.via is not None:
        out.append(
            Unsupported(
                span,
                f"`via={site.via}` maps rows into the groups of a summed-out site; NumPyro's "
                "enumeration has no such map: give the observe the group plate",
            )
        )
    if not site.sums_exactly:
        out.append(
            Unsupported(
                span,
                f"reduction={site.reduction}: NumPyro's enumeration sums the values out "
                "(logsumexp) only",
            )
        )
    size = draw_size(m.plan, site, family)
    bound = {a.param for a in site.args if family.param(a.param) is not None}
    args = {p: "x" for p in bound}
    for p in family.params:
        if p.name not in bound and p.default is not None:
            args[p.name] = "x"
    if sized(family):
        if size is None:
            out.append(Unsupported(span, "the size of this LKJCholesky draw is not known"))
        args["dimension"] = "x"
    if family_call(family.name, args) is None:
        missing = [p.name for p in family.params if p.name not in args]
        why = f"is missing {', '.join(missing)}" if missing else "is not exported with these"
        out.append(Unsupported(span, f"{family.name}({', '.join(sorted(bound))}) {why}"))
    for a in site.args:
        param = family.param(a.param)
        if param is None:
            continue
        out += _argument_problems(m, site, a, param.rank, size)
    return out


def _missing(family: Family) -> str:
    if family.dirac or family.kernel_only:
        return f"{family.name} has no distribution of its own, so no NumPyro site draws it"
    return (
        f"NumPyro has no {family.name} distribution with qvr's parameterisation "
        f"({family.signature()})"
    )


def _argument_problems(
    m: Analysis, site: Site, a: Argument, rank: int, size: int | None
) -> list[Unsupported]:
    out: list[Unsupported] = []
    if rank >= 2 and a.literal is not None:
        out.append(Unsupported(a.span, f"a literal {a.param} matrix is not exported"))
    if rank == 1 and size is None and isinstance(a.literal, float):
        out.append(
            Unsupported(
                a.span,
                f"a number for the vector {a.param}: the size of one draw is not known here",
            )
        )
    if a.name is not None and a.name not in m.names:
        out.append(Unsupported(a.span, f"`{a.name}` is not a value of this program"))
    for i, plate in zip(a.index, a.index_plates, strict=False):
        if plate in m.terms.one_entry and i not in m.terms.plates:
            out.append(_one_entry(a.span, plate))
    if a.name is not None and a.index:
        if a.name in m.terms.dependent:
            out.append(
                Unsupported(
                    a.span,
                    f"a gather from `{a.name}`, which depends on a summed-out site: NumPyro "
                    "enumerates that site in dimensions on the left, which the index would "
                    "read instead",
                )
            )
        whole = False
        for i in a.index:
            if i in m.terms.plates:
                whole = True
            elif i not in m.names:
                out.append(Unsupported(a.span, f"the index `{i}` is not a value of this program"))
            elif whole and i in m.terms.dependent:
                out.append(
                    Unsupported(
                        a.span,
                        "an index by a summed-out site after a whole axis: put the "
                        "summed-out index first",
                    )
                )
    return out


def _enumeration_problems(m: Analysis) -> list[Unsupported]:
    """What NumPyro's enumeration needs of the plates: every plate at one dimension, each
    step a summed-out site reaches inside that site's plates, and no axis outside plates."""
    out: list[Unsupported] = []
    sites = m.plan.model.sites
    dims: dict[str, tuple[int, Site]] = {}
    for site in sites:
        for plate, dim in frames(site, m.plan.sizes):
            first = dims.setdefault(plate, (dim, site))
            if first[0] != dim:
                out.append(
                    Unsupported(
                        site.step.span,
                        f"{plate} is dimension {dim} of this step but {first[0]} of "
                        f"`{first[1].name}` (line {first[1].line}): NumPyro's enumeration "
                        "needs each plate at one dimension",
                    )
                )
        if site.type is not None and site.type.data_plates:
            out.append(
                Unsupported(
                    site.step.span,
                    "this step runs over rows no plate names, and the program sums a site "
                    "out: NumPyro's enumeration needs every axis in a plate; annotate the "
                    "step with the plate of its rows",
                )
            )
    for outer in sites:
        if outer.name not in m.enumerated:
            continue
        groups = [p for p, _ in frames(outer, m.plan.sizes)]
        for inner in reached(m.plan, outer):
            axes = [p for p, _ in frames(inner, m.plan.sizes)]
            if inner.via is None and axes[: len(groups)] != groups:
                out.append(
                    Unsupported(
                        inner.step.span,
                        f"qvr sums `{outer.name}` out once per entry of {' * '.join(groups)}; "
                        "NumPyro's enumeration needs this step over those plates first",
                    )
                )
    return out


__all__ = ["problems"]
