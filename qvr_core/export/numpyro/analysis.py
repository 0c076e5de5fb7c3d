"""What writing one plan as NumPyro needs to know before any line is decided.

The Python name of every QVR name, the sites NumPyro enumerates and the values that
carry their dimensions, each plate's `numpyro.plate` name and size, and a site's
plates with their NumPyro dimensions. Both halves of the lowering read it: the
problems (what NumPyro cannot say) and the tree (what it says), so the two agree on
every name and dimension.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from qvr_core.builtins import Family
from qvr_core.check.model import Argument, Let, Site, axis_plates, one_entry, walk
from qvr_core.export.numpyro.terms import Terms
from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.targets import PYTHON_WORDS

#: Python names a QVR name cannot be, and is renamed from: what the model's own code
#: uses, the words Python keeps (`__debug__` cannot be assigned), and `MCMC.run`'s own
#: parameters, since the data reach the model as its keyword arguments.
_RESERVED = (
    frozenset({"numpyro", "dist", "jnp", "jax", "Vindex", "float", "int", "model"})
    | PYTHON_WORDS
    | frozenset({"self", "rng_key", "extra_fields", "init_params"})
)


@dataclass(frozen=True)
class Analysis:
    """One plan with what writing it needs: Python names, enumerated sites, sizes.
    `unsized` holds a problem for each plate whose size nothing in the program gives."""

    plan: Plan
    names: Mapping[str, str]
    enumerated: frozenset[str]
    terms: Terms
    sizes: Mapping[str, str]  # plate -> its size as Python writes it
    plates: Mapping[str, str]  # plate -> its numpyro.plate name
    unsized: tuple[Unsupported, ...]


def analyse(plan: Plan) -> Analysis:
    """The names, enumerated sites and sizes of `plan`; a value depends on an enumerated
    site where a `let` reads one (or reads such a let), since it then carries that
    site's dimensions on the left."""
    model = plan.model
    names = _python_names(plan)
    integer = frozenset(d.name for d in plan.data if d.integer)
    enumerated = frozenset(s.name for s in model.sites if _enumerated(s))
    dependent = set(enumerated)
    for step in model.steps:
        if isinstance(step, Let) and set(step.uses) & dependent:
            dependent.add(step.name)
    objects = frozenset(n for n, o in plan.module.objects.items() if o.size > 0)
    terms = Terms(names, integer, enumerated, frozenset(dependent), objects, one_entry(plan.sizes))
    sizes, unsized = _sizes(plan, names)
    return Analysis(plan, names, enumerated, terms, sizes, _plate_names(plan), tuple(unsized))


def _enumerated(site: Site) -> bool:
    """A `marginalize`, or a discrete latent qvr sums out for NUTS (finitely many values)."""
    return site.kind == "marginalize" or site.summable


def _python_names(plan: Plan) -> dict[str, str]:
    """Each QVR name the model binds or reads -> a Python identifier: itself, or (a
    keyword, a name the model's code uses) with trailing underscores until it is free."""
    wanted = list(dict.fromkeys([d.name for d in plan.data] + [s.name for s in plan.model.steps]))
    originals = set(wanted)
    used: set[str] = set()
    out: dict[str, str] = {}
    for name in wanted:
        py = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "_"
        if py[0].isdigit():
            py = f"_{py}"
        while py in _RESERVED or py in used or (py != name and py in originals):
            py = f"{py}_"
        used.add(py)
        out[name] = py
    return out


def _plate_names(plan: Plan) -> dict[str, str]:
    """Each plate's `numpyro.plate` name: its own, or with `_plate` after it where a
    step or a data variable has that name (a QVR site may share an object's name, but
    NumPyro's trace keeps one entry a name: the plate would hide the site from NUTS)."""
    taken = {d.name for d in plan.data} | {s.name for s in plan.model.steps}
    out: dict[str, str] = {}
    for name in plan.plates:
        label = name
        while label in taken:
            label += "_plate"
        taken.add(label)
        out[name] = label
    return out


def _sizes(plan: Plan, names: Mapping[str, str]) -> tuple[dict[str, str], list[Unsupported]]:
    """Each plate's size as Python writes it: its number, or a data variable's axis."""
    sizes: dict[str, str] = {}
    problems: list[Unsupported] = []
    used = {p for s in plan.model.sites for p in s.plates}  # one-entry ones are skipped
    for name in used:
        plate = plan.plates.get(name)
        obj = plan.module.objects.get(name)
        size = plate.size if plate is not None else (obj.size if obj is not None else None)
        if size is not None and size > 0:
            sizes[name] = str(size)
            continue
        holder = sorted(
            (d for d in plan.data if name in d.axes), key=lambda d: (d.observed, d.name)
        )
        if holder:
            d = holder[0]
            sizes[name] = f"{names[d.name]}.shape[{d.axes.index(name)}]"
        else:
            site = next(s for s in plan.model.sites if name in s.plates)
            problems.append(
                Unsupported(
                    site.step.span,
                    f"the size of {name} comes from the data, and no data variable of this "
                    "program runs over it to read it from",
                )
            )
    return sizes, problems


def frames(site: Site, sizes: Mapping[str, int]) -> list[tuple[str, int]]:
    """The plates of a site with their NumPyro dimensions: qvr lays the plates out
    outermost first, so the last is dimension -1; a one-entry plate has no axis in qvr
    (`axis_plates`), so it has no NumPyro plate either."""
    plates = axis_plates(site.plates, sizes)
    k = len(plates)
    return [(p, i - k) for i, p in enumerate(plates)]


def reached(plan: Plan, outer: Site) -> Iterator[Site]:
    """The sites whose density a summed-out site enters: its scope's, or its readers' (the
    summed scope the model's plan makes of it, `Model.summed`)."""
    node = next(n for n in walk(plan.model.summed) if n.step is outer)
    return (n.step for n in walk(node.body) if isinstance(n.step, Site))


def draw_size(plan: Plan, site: Site, family: Family) -> int | None:
    """The size of one draw of a vector family (runtime `families.event_size`)."""
    if not family.event_rank:
        return None
    if site.over and site.kind != "marginalize":
        sizes = [plan.module.objects[o].size if o in plan.module.objects else -1 for o in site.over]
        return math.prod(sizes) if all(s > 0 for s in sizes) else None
    event = site.type.element.event if site.type is not None else ()
    return event[-1] if event and event[-1] >= 0 else None


def a_number(a: Analysis, arg: Argument) -> bool:
    """A named argument that may be one number (spread to a vector parameter's size, as
    the runtime spreads a 0-d tensor): its type says so, or the data gives it."""
    if arg.name is None or arg.index or arg.name in a.terms.dependent:
        return False
    t = arg.type
    return t is None or not (t.plates or t.element.event or t.data_plates)


__all__ = ["Analysis", "a_number", "analyse", "draw_size", "frames", "reached"]
