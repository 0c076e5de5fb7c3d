"""The Python entry point: `load(path)` / `loads(source)` -> Program.

    prog = load("examples/vanilla_rnn_lm.qvr")
    model = prog.morphism          # the default export, compiled
    model.rsample(prompts)

    models = load("examples/models/linear_regression.qvr")
    regression = models["linear_regression"]    # a model program (ModelProgram)
    regression.log_joint(data, values)          # data by name, every site's value
    fitted = models.fit("linear_regression", method="nuts", data="data.json")
    fitted.run.posterior                         # the table `qvr run` prints

    grammar = load("examples/grammars/pcfg.qvr").deduction("PCFG")
    grammar.parse(["the", "dog", "runs"]).goal_weight()   # log inside weight of S

An export compiles on the runtime that runs it (`qvr_core.plan.runnable`): a seed
program or a let to a morphism (`runtime.compile`), a model program to a
`ModelProgram` (`runtime.model`). `Program.fit` runs a program as `qvr run`
does (`qvr_core.runs`).

A source with errors raises `QvrError` listing the checker's diagnostics
(`file:line:col: CODE message`). torch is imported when a model is
compiled, not when this module is.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qvr_core.plan.runnable import runnability
from qvr_core.runtime.errors import QvrError, format_diagnostics

if TYPE_CHECKING:
    from qvr_core.check.module import CheckedModule
    from qvr_core.runs.fit import Fit
    from qvr_core.runtime.compile import Compiler
    from qvr_core.runtime.deduction import DeductionEngine
    from qvr_core.runtime.model import ModelProgram
    from qvr_core.runtime.morphisms import Morphism

__all__ = ["Program", "QvrError", "load", "loads"]


class Program:
    """A checked source and its compiled exports (compiled on first access, then kept).

    All exports of one Program share the parameters of the morphisms they
    have in common.
    """

    def __init__(self, module: CheckedModule, path: str | None = None) -> None:
        if not module.ok:
            raise QvrError(
                f"{path or 'the source'} has errors:\n" + format_diagnostics(module.errors, path),
                module.errors,
                path,
            )
        self.module = module
        self.path = path
        self._compiled: dict[str, Morphism | ModelProgram] = {}
        self._deductions: dict[str, DeductionEngine] = {}

    @property
    def exports(self) -> tuple[str, ...]:
        return self.module.exports

    @property
    def morphism(self) -> Morphism | ModelProgram:
        """The default (first) export, compiled."""
        name = self.module.default_export
        if name is None:
            raise QvrError(f"{self.path or 'the source'} exports nothing: add `export NAME`")
        return self[name]

    def __getitem__(self, name: str) -> Morphism | ModelProgram:
        if name not in self.module.exports:
            raise KeyError(
                f"'{name}' is not exported; exports: {', '.join(self.module.exports) or 'none'}"
            )
        if name not in self._compiled:
            self._compiled[name] = self._compile(name)
        return self._compiled[name]

    def get(
        self, name: str, default: Morphism | ModelProgram | None = None
    ) -> Morphism | ModelProgram | None:
        return self[name] if name in self.module.exports else default

    def __contains__(self, name: object) -> bool:
        return name in self.module.exports

    def deduction(self, name: str) -> DeductionEngine:
        """The `deduction` `name`, ready to parse: `.parse(["the", "dog", "runs"])` gives
        its chart, whose `goal_weight()` is differentiable in the deduction's learnable
        weights (`.weights`, an `nn.Module`; rule weights are made as rules first fire,
        so build an optimiser after a first parse, as with quivers). A deduction without a
        lexicon runs on its axioms: `.derive([("edge(a, b)", 0.0), ...])`."""
        if name not in self._deductions:
            found = self.module.deductions.get(name)
            if found is None:
                known = ", ".join(self.module.deductions) or "none"
                raise KeyError(f"no deduction '{name}' (deductions: {known})")
            from qvr_core.runtime.deduction import DeductionEngine

            self._deductions[name] = DeductionEngine(found)
        return self._deductions[name]

    def fit(self, name: str | None = None, **arguments: Any) -> Fit:
        """Run program `name` (default: the first export) as `qvr run` does, keeping its
        draws: `method`, `steps`, `data`, ... are `qvr_core.runs.run_program`'s arguments.
        The result's `run` is the typed summary, `inference_data()` the draws."""
        from qvr_core.runs.fit import fit

        return fit(self.module.source, path=self.path, program=name, **arguments)

    def _compile(self, name: str) -> Morphism | ModelProgram:
        verdict = runnability(self.module, name)
        if verdict.kind == "model":
            from qvr_core.runtime.model import compile_model

            return compile_model(self.module, name)
        if verdict.kind is None and name not in self.module.lets and verdict.reason:
            raise QvrError(verdict.reason)
        return self._compiler.export(name)

    @cached_property
    def _compiler(self) -> Compiler:
        from qvr_core.runtime.compile import Compiler

        return Compiler(self.module, self.path)

    def __repr__(self) -> str:
        return f"Program({self.path or '<source>'}, exports={list(self.exports)})"


def loads(source: str, *, path: str | None = None, strict: bool = False) -> Program:
    """Check and wrap QVR source text; raises QvrError if it has errors."""
    from qvr_core.check import check

    return Program(check(source, strict=strict), path)


def load(path: str | Path, *, strict: bool = False) -> Program:
    """Read, check and wrap a `.qvr` file; raises QvrError if it has errors."""
    text = Path(path).read_text(encoding="utf-8")
    return loads(text, path=str(path), strict=strict)
