"""Which code lenses go above which program: run, prior predictive, calibrate, diagram, export.

A lens is an action offered on a program's header line. Which ones a program gets is
a fact about the checked module, so it is decided here, as plain values, and the
language server only turns each into the protocol's command:

- *run* above each exported program a run can load (`plan.runnable`);
- *prior predictive* and *calibrate* above such a program that is a model whose
  priors have draws (no improper `Flat`): both draw from the priors;
- *diagram* above every program of morphisms and every model program;
- *export* above the model programs the caller can export (the export target is
  the server's setting, and `qvr_core.export` is a sibling of this package, so the
  caller passes the programs its target takes).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from qvr_core.check.module import CheckedModule
from qvr_core.plan.runnable import improper_prior, runnable_programs
from qvr_core.text.span import Span


class LensKind(enum.Enum):
    RUN = "run"
    PRIOR = "prior"
    CALIBRATE = "calibrate"
    DIAGRAM = "diagram"
    EXPORT = "export"


@dataclass(frozen=True)
class Lens:
    """One lens: its kind, above `program`, whose header is `header`."""

    kind: LensKind
    program: str
    header: Span


def code_lenses(module: CheckedModule, exportable: Iterable[str] = ()) -> list[Lens]:
    """The lenses of `module`, in the order of the programs in the text and, above one
    program, run, prior, calibrate, diagram, export. `exportable`: the model programs
    the chosen export target takes (none: no export lens)."""
    runnable = runnable_programs(module)
    decls = {p.name: p.decl for p in module.programs.values()}
    decls |= {m.name: m.decl for m in module.models.values()} | runnable
    exported = frozenset(p for p in exportable if p in module.models)
    lenses: list[Lens] = []
    for name, decl in sorted(decls.items(), key=lambda item: item[1].span.start):
        header = decl.header_span
        if name in module.exports and name in runnable:  # what a run can load
            lenses.append(Lens(LensKind.RUN, name, header))
            # its priors are the user's own: worth a look, where they have draws
            if name in module.models and improper_prior(module, name) is None:
                lenses.append(Lens(LensKind.PRIOR, name, header))
                # simulation-based calibration draws from the priors as well
                lenses.append(Lens(LensKind.CALIBRATE, name, header))
        if name in module.programs or name in module.models:  # what the diagram draws
            lenses.append(Lens(LensKind.DIAGRAM, name, header))
        if name in exported:
            lenses.append(Lens(LensKind.EXPORT, name, header))
    return lenses
