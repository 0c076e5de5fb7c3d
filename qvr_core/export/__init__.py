"""Export checked model programs to Stan, NumPyro and PyMC (see docs/export.md).

Pure text generation from the checked module: nothing here imports torch or a
target's library; the exports are proved by running them (tests/export).
"""

from __future__ import annotations

from qvr_core.export.api import Exported, export_program, exportable_programs, target_diagnostics
from qvr_core.export.targets import TARGETS, Target, target

__all__ = [
    "TARGETS",
    "Exported",
    "Target",
    "export_program",
    "exportable_programs",
    "target",
    "target_diagnostics",
]
