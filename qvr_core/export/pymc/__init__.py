"""Write a checked model program as a PyMC model (`qvr export --to pymc`).

The export is a Python module with `build_model(**data) -> pm.Model`, which takes
the keys of the same JSON data file `qvr run --data` reads (indices from 0), and a
`__main__` block that samples it. It means what qvr's runtime means:

- every plate is a coordinate of the model (`coords={"School": range(8)}`) and every
  plated value has `dims=`; a plate of one entry has no axis in qvr, so it has none
  here either;
- a family is the PyMC distribution with the runtime's parameterisation (PyMC's
  `NegativeBinomial` and `ZeroInflatedPoisson` count the other way, so their
  probability is written as one minus qvr's); a family PyMC lacks, or has with another
  support (its `VonMises` lives on [-pi, pi], qvr's on the real line), is refused by
  `unsupported` at the step, never written approximately;
- a `let` is a `pm.Deterministic` where it depends on a random variable, so its
  draws are in the trace as qvr's summaries show them; a let over the data's rows that
  the program does not return (a linear predictor) is a plain PyTensor value, since
  tracing it would keep rows x draws numbers nobody asked for; a `score` is a
  `pm.Potential`;
- a `marginalize` scope is summed out exactly, as the runtime's enumeration does: a
  scope of one observe on its groups is `pm.Mixture` (PyMC's own exact sum); any
  other is a `pm.Potential` of the scope's log-sum-exp over its values, written as a
  function per scope that runs the scope's steps once per value, nested scopes calling
  the inner function. The inner functions are cached on the enumerated values they
  read, so a chain of scopes (an HMM) costs what the forward algorithm costs, as the
  runtime's sums do;
- a discrete `sample` site with no data, which qvr's NUTS sums out, stays a discrete
  random variable: PyMC samples it with its own Gibbs steps, the same posterior.

The package writes it in two steps: `lower.lower` turns the plan into the tree of the
module (`tree.py`) or into the problems PyMC cannot say, and `printer.write` turns the
tree into text. `unsupported` and `emit` share that one lowering.
"""

from __future__ import annotations

from qvr_core.export.pymc.families import PYMC_FAMILIES, WHY_NOT, family_call, keywords
from qvr_core.export.pymc.lower import lower
from qvr_core.export.pymc.printer import write
from qvr_core.export.writer import Writer

_WRITER = Writer("PyMC", lower, write)
written = _WRITER.written
unsupported = _WRITER.unsupported
emit = _WRITER.emit


__all__ = ["PYMC_FAMILIES", "WHY_NOT", "emit", "family_call", "keywords", "unsupported", "written"]
