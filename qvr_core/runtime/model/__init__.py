"""Bayesian model programs: family steps with arguments, plates, data, gathers,
`let` arithmetic, `score` factors and `marginalize` scopes, compiled to a log joint.

`compile_model(checked, name)` gives a `ModelProgram`, which speaks the runtime
protocol inference relies on (docs/architecture.md) with no batch axis: every
site is one tensor shaped by its plates, and the data (observed sites and the
free data names) is bound by name. See docs/runtime.md, "Model programs".
"""

from qvr_core.runtime.model.program import ModelProgram, ModelRun, compile_model

__all__ = ["ModelProgram", "ModelRun", "compile_model"]
