"""The Python and PyMC names of a plan's QVR names.

A QVR name is written as a Python name (a keyword or a name the module itself uses gets
a trailing `_`) and names a PyMC variable, which keeps the QVR name wherever PyMC and
ArviZ let it: the trace is what a user reads, so its names are the program's.
"""

from __future__ import annotations

import builtins

from qvr_core.check.model import Parameter
from qvr_core.export.plan import Plan
from qvr_core.export.targets import PYTHON_WORDS

#: Python's words and builtins: a QVR name equal to one is written with a trailing `_`.
_TAKEN = PYTHON_WORDS | frozenset(dir(builtins))
#: Names a PyMC variable cannot have: pytensor's compiled functions take the free
#: variables as keyword arguments beside these (`Function.__call__(self, *args,
#: output_subset=None, **kwargs)`), so a variable so named stops `pm.sample`.
_PYMC_WORDS = frozenset({"self", "output_subset"})
#: Names the module itself uses, which a QVR name is kept from alike.
_MODULE = frozenset(
    {"np", "pm", "pt", "functools", "json", "sys", "model", "coords", "data", "file", "idata"}
    | {"build_model", "per_group", "RENAMED", "lp", "per_value"}
)


def _qvr_names(plan: Plan, params: list[Parameter]) -> list[str]:
    """Every name the module binds, in the order it binds them: parameters, data, steps."""
    qvr = [*(p.name for p in params), *(d.name for d in plan.data)]
    return qvr + [s.name for s in plan.model.steps]


def python_names(plan: Plan, params: list[Parameter]) -> dict[str, str]:
    """Each QVR name as a Python name: a Python word or a name the module uses gets a
    trailing `_` (the PyMC variable keeps the QVR name). A name the checker made for a
    computation's draw or weight (`post@1`, `answer.score`, `post.loc`) has `_` for each
    character Python does not allow."""
    qvr = _qvr_names(plan, params)
    taken = set(qvr)
    out: dict[str, str] = {}
    for name in dict.fromkeys(qvr):
        py = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
        if not py.isidentifier():
            py = f"_{py}"
        while py in _TAKEN or py in _MODULE or (py != name and py in taken):
            py += "_"
        taken.add(py)
        out[name] = py
    return out


def variable_names(plan: Plan, params: list[Parameter]) -> dict[str, str]:
    """Each QVR name as the name of its PyMC variable where that is not the name itself:
    where PyMC would not keep it: a word of `_PYMC_WORDS`, a name ending in `__` (PyMC's
    own transformed variables: `sigma_log__`), a coordinate's (ArviZ's trace would keep
    the coordinate and drop the variable). Those end in one `_`, then a number where
    that is taken (`self_`, `lp_`, `School_2`)."""
    qvr = _qvr_names(plan, params)
    coords = set(plan.plates)
    taken = set(qvr) | coords | _PYMC_WORDS
    out: dict[str, str] = {}
    for name in dict.fromkeys(qvr):
        if name not in _PYMC_WORDS and name not in coords and not name.endswith("__"):
            continue
        stem = name.rstrip("_") + "_"
        label, k = stem, 1
        while label in taken:
            k += 1
            label = f"{stem}{k}"
        taken.add(label)
        out[name] = label
    return out


__all__ = ["python_names", "variable_names"]
