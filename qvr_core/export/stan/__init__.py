"""A checked model program written as a Stan program (`qvr export --to stan`).

The Stan program reads the same JSON data file qvr reads, unchanged: each data
variable is declared under its QVR name, with its sizes and the bounds its family
gives it; qvr counts indices (and Categorical observations) from 0, so each gets a
1-based copy in `transformed data` (`county_1`). A plate whose size the source
fixes (`object School : FinSet 8`) is a `transformed data` int named after it
(the `data` block, which is read before it, spells those sizes as numbers).

Sites become `parameters` constrained to their family's support and `~`
statements in source order (a `Flat`, `HalfFlat` or `BoundedFlat` prior is the
parameter alone, as Stan writes a flat prior; a bound that is a `let` of earlier
parameters is written out in the declaration); `let`s become `transformed data`
(when they read only data), `transformed parameters` (what the program returns, and
what that reads) or `model` locals. A `marginalize` scope sums its coordinate out exactly, as qvr's
runtime does (`runtime/model/marginal.py`): per group, `log_sum_exp` over the
coordinate's values of its log prior plus the scope's terms, nested scopes inside
the loop of the one around them (an HMM's chain of states), every term inside a
scope written as a normalised `_lpdf` so that the sum is the same number qvr's is.

`unsupported(plan)` and `emit(plan)` run the same lowering (`lower.py`: the plan to a
Stan program tree, or the located problems that stop it), so whatever the lowering
cannot say in Stan with exactly qvr's meaning is a located problem, and nothing is
written for a program that has one. The printer (`printer.py`) writes the tree out,
deciding only its layout. The term printer (`terms.py`) writes each expression with
its Stan type, and the family table (`families.py`) says which Stan distribution has
each family's density.
"""

from __future__ import annotations

from qvr_core.export.stan.families import STAN_FAMILIES
from qvr_core.export.stan.lower import lower
from qvr_core.export.stan.printer import write
from qvr_core.export.writer import Writer

_WRITER = Writer("Stan", lower, write)
written = _WRITER.written
unsupported = _WRITER.unsupported
emit = _WRITER.emit


__all__ = ["STAN_FAMILIES", "emit", "unsupported", "written"]
