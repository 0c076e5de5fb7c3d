"""Which plate a data-sized value's rows are: one fact the export and subsampling share.

The checker types a covariate `x` (and a let reading it) only as "rows the data
sizes"; the site over a plate that reads it is what lines those rows up with the
plate. Both the export plan (a declared size per axis) and the subsample plan
(which axis a minibatch slices) need it, so it is computed here, once.
"""

from __future__ import annotations

from qvr_core.check.model import Let, Model
from qvr_core.check.types import Plated


def is_data_sized(t: Plated | None) -> bool:
    """A value whose rows the data sizes (or whose type the checker does not know)."""
    return t is None or t.data_plates


def data_sized(model: Model) -> set[str]:
    """The data variables and lets whose rows the data sizes."""
    sized = {d.name for d in model.data if is_data_sized(d.type)}
    sized |= {s.name for s in model.steps if isinstance(s, Let) and s.type and s.type.data_plates}
    return sized


def data_rows(model: Model) -> dict[str, str]:
    """Each data-sized value (a data variable or a let) -> the plate of the site reading it.

    The checker knows `x`'s rows only as "what the data says"; a site over a plate
    that reads it (through lets) fixes them, which is what a declared size in the
    target needs. A value that sites over different plates read stays out.
    """
    sized = data_sized(model)
    found: dict[str, set[str]] = {}
    for site in model.sites:
        if not site.plates:
            continue
        reads = list(site.reads())
        if site.kind == "observe" and site.name in model.observed_lets:
            reads.append(site.name)  # the let it observes, and the data that computes it
        for name in model.through_lets(reads) & sized:
            found.setdefault(name, set()).add(site.plates[0])
    return {name: next(iter(p)) for name, p in found.items() if len(p) == 1}
