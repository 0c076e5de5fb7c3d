"""The NumPyro target: a checked model program written as a NumPyro model.

The export is a Python module a NumPyro user would write by hand: `model(<data>,
<observed>=None)` with one `numpyro.sample` per site, a `numpyro.plate` named after
each QVR object a site runs over, `numpyro.deterministic` for the `let`s the program
returns (what a user asks to see; the others stay plain arithmetic so the trace
holds only what qvr reports too), `numpyro.factor` for `score`, and a `load_data`
that reads the same JSON data file qvr reads (indices from 0), plus a `__main__`
block that runs NUTS on a data file given on the command line.

Every family is the numpyro.distributions call with the parameterisation of
qvr's runtime (`runtime/distributions.py`): a Categorical's probabilities are
normalised as torch normalises them, a number given for a vector parameter is
spread to the size of one draw, a HalfStudentT is the folded StudentT it is.

A `marginalize` scope, and a discrete latent qvr sums out for NUTS, are NumPyro's
parallel enumeration (`infer={"enumerate": "parallel"}`, funsor): each such site
gets dimensions of its own on the left, so gathers by it go through `Vindex` and
the plates keep one dimension each. A one-entry plate has no axis in qvr and gets
no NumPyro plate either. What NumPyro cannot say with qvr's meaning (a `via=` map,
a reduction other than logsumexp, a reduction of an enumerated value, a family it
lacks) comes back from `unsupported` at the construct, never as wrong code.

The export is lowered, then printed: `lower.lower` takes every decision and
returns the module as a tree (`module.py`) or the located problems
(`problems.py`); `printer.print_module` lays the tree out as text and cannot
fail. `unsupported` and `emit` ask the same lowering, so the check and the
export never disagree. The family tables are `families.py`, the function tables
`functions.py`, the terms' printer `terms.py`.
"""

from __future__ import annotations

from qvr_core.export.numpyro.families import (
    CALLS,
    ENUMERABLE,
    OBSERVED_ONLY,
    family_call,
)
from qvr_core.export.numpyro.lower import lower
from qvr_core.export.numpyro.printer import print_module
from qvr_core.export.writer import Writer

_WRITER = Writer("NumPyro", lower, print_module)
written = _WRITER.written
unsupported = _WRITER.unsupported
emit = _WRITER.emit


__all__ = ["CALLS", "ENUMERABLE", "OBSERVED_ONLY", "emit", "family_call", "unsupported", "written"]
