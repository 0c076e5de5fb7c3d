"""The checked module: the one value every later stage reads.

`check()` builds it from source text; the graph, the runtime compiler, the
formatter's safety checks and every editor feature are functions of it.
Nothing after the checker re-derives a type or re-resolves a name.
"""

from __future__ import annotations

import logging
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING

from qvr_core.check.chart_grammar import ChartGrammar
from qvr_core.check.deduction_system import Deduction
from qvr_core.check.kept import Kept
from qvr_core.check.model import Model
from qvr_core.check.types import Arrow, Group, ObjectType, Plated, Product, ValueType
from qvr_core.check.wiring import Contraction
from qvr_core.syntax import ast
from qvr_core.syntax.ast import Call, Expr  # the field `ast` hides the module in the class
from qvr_core.text.diagnostics import Diagnostic, Severity
from qvr_core.text.span import LineIndex, Span

if TYPE_CHECKING:
    from qvr_core.check.qiec_checks import QiecRecord


class SymbolKind(StrEnum):
    OBJECT = "object"
    MORPHISM = "morphism"
    LET = "let"
    PROGRAM = "program"
    PARAM = "parameter"  # a program's named input
    SAMPLE = "sample"  # a sampled site
    OBSERVE = "observe"  # an observed site
    LOCAL = "local"  # a program-local `let` value
    DATA = "data"  # a data variable: a name bound from the data when the model is fitted
    DECLARATION = "declaration"  # a declaration kind the checker does not model yet


@dataclass(frozen=True)
class Symbol:
    """One definition. `scope` is the enclosing program's name for locals, else None."""

    name: str
    kind: SymbolKind
    span: Span  # the defining name
    decl_span: Span  # the whole declaration or step
    scope: str | None
    type: Arrow | ValueType | ObjectType | Group | Plated | None
    doc: str | None = None
    detail: str = ""  # one-line signature as the user would write it


@dataclass(frozen=True)
class Reference:
    """A use (or the definition itself, `is_definition`) of a symbol at a span."""

    span: Span
    symbol: Symbol
    is_definition: bool = False


@dataclass(frozen=True)
class TypedSpan:
    """The inferred type of the syntax node at `span`, for hover and inlay hints."""

    span: Span
    type: Arrow | ValueType | ObjectType | Group | Plated
    label: str  # the source text of the node, e.g. "fan(forward_path, backward_path)"
    note: str = ""  # extra facts shown in hover ("reads right to left")


class SymbolTable:
    """Definitions and references, indexed by position; hover, rename and completion read it."""

    def __init__(self, symbols: tuple[Symbol, ...], references: tuple[Reference, ...]) -> None:
        self.symbols = symbols
        self.references = tuple(sorted(references, key=lambda r: r.span.start))
        self._starts = [r.span.start for r in self.references]

    def reference_at(self, offset: int) -> Reference | None:
        """The reference or definition whose name contains the offset (cursor at its end counts)."""
        i = bisect_right(self._starts, offset) - 1
        for j in (i, i - 1):
            if 0 <= j < len(self.references) and self.references[j].span.contains(offset):
                return self.references[j]
        return None

    def references_to(self, symbol: Symbol, include_definition: bool = True) -> list[Reference]:
        return [
            r
            for r in self.references
            if r.symbol == symbol and (include_definition or not r.is_definition)
        ]

    def top_level(self) -> list[Symbol]:
        return [s for s in self.symbols if s.scope is None]

    def in_scope(self, program: str | None) -> list[Symbol]:
        """Symbols visible inside `program` (its locals and the top level)."""
        return [s for s in self.symbols if s.scope is None or s.scope == program]

    def lookup(self, name: str, scope: str | None = None) -> Symbol | None:
        for s in self.symbols:
            if s.name == name and s.scope == scope:
                return s
        if scope is not None:
            return self.lookup(name, None)
        return None


#: A family parameter a morphism's declaration fixes: a number (every coordinate), one
#: number per codomain coordinate, a vector or a matrix.
Given = float | tuple[float, ...] | tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class ModuleAlgebra:
    """The composition rule a file declares (`composition real [level=algebra]`), checked.

    `rule` is the registry's name (`qvr_core.builtins.algebras.ALGEBRAS`) when the
    declaration names a registered rule, None for an inline body (`tensor_op(a, b) =
    ...`), which the checker types but the runtime does not compute. `level` is the
    declared level (`rule` when none is written, as quivers reads it). `span` is the
    name in the declaration, where the runtime's refusals point. The runtime reads
    this record; nothing downstream reads the declaration again.
    """

    name: str
    level: str
    rule: str | None
    span: Span

    @property
    def line(self) -> int:
        """The declaration's line, counted from 1 (for messages)."""
        return self.span.start_line + 1


@dataclass(frozen=True)
class MorphismInfo:
    """A declared morphism with its validated options."""

    name: str
    decl: ast.MorphismDecl
    type: Arrow
    role: str | None  # "discretize" | "embed" | "kernel" | "latent"
    family: str | None
    #: a kernel's fixed standard deviation; a latent's initial spread (its raw parameter
    #: drawn Normal(0, scale), as quivers' LatentMorphism; without it qvr starts at 0)
    scale: float | None = None
    init: str | None = None  # a latent's `init=auto`: its rule's start (`auto_start`)
    replicate: int | None = None
    param_source: str = "mlp"
    hidden_dim: int = 64
    rank: int | None = None
    #: a discretize morphism's number of bins (`role=discretize, bins=N`)
    bins: int | None = None
    #: `~ F(args)` (or an option named after a parameter of F): the parameters it fixes,
    #: in the schema's order, and those its parameter network gives; None for `~ F`,
    #: whose network gives what F's kernel form says.
    given: tuple[tuple[str, Given], ...] | None = None
    network: tuple[str, ...] = ()
    #: A kernel whose one draw is a vector or matrix filling its codomain (`~ Wishart`,
    #: `~ GP`, the registry's whole-draw kernel forms): the shape of that draw (the codomain
    #: holds it row by row), and the options its family reads (`rank`, `kernel`), every
    #: one of them with its value or default.
    draw: tuple[int, ...] = ()
    family_options: tuple[tuple[str, float | str], ...] = ()

    @property
    def members(self) -> tuple[str, ...]:
        """Names of the replicated copies (`head_0`...), empty without replicate."""
        if not self.replicate:
            return ()
        return tuple(f"{self.name}_{i}" for i in range(self.replicate))


@dataclass(frozen=True)
class LetInfo:
    name: str
    decl: ast.LetDecl
    type: Arrow | None  # None when the expression has an error
    #: what a `parser(...)` let computes (check/chart_parsers.py); None for other lets
    grammar: ChartGrammar | None = None
    #: what a let bound to a change-of-base transformation names (`define pipe = s >>>
    #: expectation`, check/change_base.py): its steps in order; None for other lets
    transformation: tuple[TransformationStep, ...] | None = None


@dataclass(frozen=True)
class TransformationStep:
    """One step of a change of base: a registered transformation
    (`builtins.transformations`) and what a constructor is called with, the object of its
    axis (`softmax(B)`) or the morphism of its prior (`bayes_invert(pi)`); "" for none."""

    name: str
    argument: str = ""


@dataclass(frozen=True)
class SiteInfo:
    """A `sample` or `observe` step: a random variable of the program."""

    name: str
    kind: str  # "sample" | "observe"
    step: ast.SampleStep | ast.ObserveStep
    source: ast.Expr  # the morphism expression (the callee for an application)
    args: tuple[str, ...] | None  # named values it is applied to; None = the program input
    morphism_type: Arrow | None
    value_type: ValueType | None
    # a tuple site `sample (a, b) <- f(x)`: the names its value is split into, in order
    # (its own name is then `(a, b)`); empty for a site bound to one name
    parts: tuple[str, ...] = ()
    # a family step `sample h <- Normal(r, 0.5)` (check/family_steps.py): the family, and
    # each of its parameters as the number written or the named value (one of `args`)
    family: str | None = None
    family_args: tuple[tuple[str, float | str], ...] = ()


@dataclass(frozen=True)
class ProgramInfo:
    name: str
    decl: ast.ProgramDecl
    header: Arrow  # as written
    type: Arrow | None  # inferred (with sequence lifting), None if the body has errors
    params: tuple[tuple[str, ValueType], ...]  # named inputs; empty without PARAMS
    sites: tuple[SiteInfo, ...]
    values: Mapping[str, ValueType]  # every local value's type (params, sites, lets)
    returns: tuple[str, ...]
    # data names: free names that pick positions (`h[pred_positions]`), given with the
    # observations when the program runs
    data: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckedModule:
    """Everything the checker learnt about one source text."""

    source: str
    ast: ast.Module
    objects: Mapping[str, ObjectType]
    aliases: Mapping[str, Product]  # `object State : Hidden * Hidden`
    morphisms: Mapping[str, MorphismInfo]  # by declared name (groups by their bare name)
    lets: Mapping[str, LetInfo]
    programs: Mapping[str, ProgramInfo]
    exports: tuple[str, ...]
    expr_types: Mapping[Expr, Arrow | Group]  # every morphism sub-expression
    reversed_scans: frozenset[Call]  # `scan(..., reverse=true)` calls: read right to left
    # Bidirectional convention: `fan` call -> indices of the branches that are fed the
    # input sequence reversed (the second branch of `fan(p, q)` when both scan it).
    reversed_branches: Mapping[Call, frozenset[int]]
    symbols: SymbolTable
    typed_spans: tuple[TypedSpan, ...]  # sorted by start
    diagnostics: tuple[Diagnostic, ...]
    strict: bool = False
    lines: LineIndex = field(default_factory=lambda: LineIndex(""), compare=False)
    #: Bayesian programs (family steps, plates, data variables), by name: see check/model.py.
    #: A program is in `programs` (the seeds' kind, applying morphisms) or here, not both.
    models: Mapping[str, Model] = field(default_factory=dict)
    #: The declared composition rule (`composition NAME`), None when the file declares
    #: none: qvr then runs finite-set latents as row-stochastic matrices (`markov`).
    algebra: ModuleAlgebra | None = None
    #: The checked `deduction` declarations, by name (check/deductions.py).
    deductions: Mapping[str, Deduction] = field(default_factory=dict)
    #: The checked `contraction` declarations, by name (check/contractions.py); the
    #: lowered model and the runtime read what a call computes from them.
    contractions: Mapping[str, Contraction] = field(default_factory=dict)
    #: The checked QIEC declarations (computations, indices, families, interfaces with
    #: static parameters, handlers), by name (check/qiec_eval.py).
    qiec: Mapping[str, QiecRecord] = field(default_factory=dict)

    def materialize(self, stop: Callable[[], bool] | None = None) -> bool:
        """Nothing to do: every table is built (see PendingModule). True when built."""
        return True

    @property
    def ready(self) -> bool:
        """True when every table is built (reading one does not wait)."""
        return True

    @property
    def kept(self) -> Kept | None:
        """How the incremental check that made this module relates to the checks before
        it (kept.py); None for a module checked on its own."""
        found = self.__dict__.get("_kept")
        return found if isinstance(found, Kept) else None

    @property
    def ok(self) -> bool:
        """True when there is no error (hints and warnings allowed): it can compile."""
        return not any(d.severity is Severity.ERROR for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    def type_at(self, offset: int) -> TypedSpan | None:
        """The narrowest typed node containing the offset.

        Only the spans that start inside the enclosing declaration and before
        the offset can contain it, so two binary searches bound the scan.
        """
        starts = self._typed_starts
        hi = bisect_right(starts, offset)
        lo = bisect_left(starts, self._declaration_start(offset))
        best: TypedSpan | None = None
        for t in self.typed_spans[lo:hi]:
            if t.span.contains(offset) and (best is None or t.span.length <= best.span.length):
                best = t
        return best

    @cached_property
    def _typed_starts(self) -> list[int]:
        return [t.span.start for t in self.typed_spans]

    @cached_property
    def _decl_starts(self) -> list[int]:
        return [d.span.start for d in self.ast.decls]

    def _declaration_start(self, offset: int) -> int:
        i = bisect_right(self._decl_starts, offset) - 1
        return self._decl_starts[i] if i >= 0 else 0

    def resolve_morphism(self, name: str) -> tuple[MorphismInfo, int | None] | None:
        """A morphism by name, including replicated members (`head_2` -> (head, 2))."""
        if name in self.morphisms:
            return self.morphisms[name], None
        base, _, idx = name.rpartition("_")
        info = self.morphisms.get(base)
        if info and info.replicate and idx.isdigit() and int(idx) < info.replicate:
            return info, int(idx)
        return None

    @property
    def default_export(self) -> str | None:
        return self.exports[0] if self.exports else None


class PendingModule(CheckedModule):
    """A checked module whose diagnostics are final and whose other tables come on first use.

    After an edit an editor needs the diagnostics first; moving the facts of
    the declarations the edit did not touch into their new place costs more
    than finding the diagnostics, so `build` does it only when asked (or
    when `materialize` is called, off the path of the diagnostics).
    """

    _lock: threading.Lock
    _build: Callable[[Callable[[], bool]], CheckedModule] | None
    #: the whole check of the source again, for when `build` fails (a bug must cost the
    #: reuse, not the module): given by whoever made the module, so that this table
    #: module does not import the checker
    _recheck: Callable[[], CheckedModule] | None

    def __init__(
        self,
        source: str,
        diagnostics: tuple[Diagnostic, ...],
        strict: bool = False,
        lines: LineIndex | None = None,
        build: Callable[[Callable[[], bool]], CheckedModule] | None = None,
        kept: Kept | None = None,
        recheck: Callable[[], CheckedModule] | None = None,
        **tables: object,
    ) -> None:
        put = object.__setattr__
        put(self, "_lock", threading.Lock())
        put(self, "_build", build)
        put(self, "_recheck", recheck)
        put(self, "_kept", kept)
        if build is None:  # every table given, as `dataclasses.replace` does
            given = dict(tables, source=source, diagnostics=diagnostics, strict=strict, lines=lines)
            CheckedModule.__init__(self, **given)  # type: ignore[arg-type]  # every field, as given
            return
        put(self, "source", source)
        put(self, "diagnostics", diagnostics)
        put(self, "strict", strict)
        put(self, "lines", lines)

    @property
    def ready(self) -> bool:
        return self.__dict__.get("_build") is None

    def __getattr__(self, name: str) -> object:
        # only called for attributes not set yet: the tables `build` makes
        if name.startswith("_"):
            raise AttributeError(name)
        self.materialize()
        return object.__getattribute__(self, name)

    def materialize(self, stop: Callable[[], bool] | None = None) -> bool:
        """Build every table now (thread-safe; once). True when built.

        `stop` is asked now and then: when it says so, the work is dropped
        (the module stays pending) and False is returned. An editor passes
        "a newer text has come", since these tables are then never read.
        """
        with self._lock:
            build = self.__dict__.get("_build")
            if build is None:
                return True
            try:
                full = build(stop or _never)
            except Stopped:
                return False
            except Exception:  # a bug must cost the reuse, not the module
                logging.getLogger(__name__).exception("building the module's tables failed")
                if self._recheck is None:
                    raise
                full = self._recheck()
            for f in fields(CheckedModule):
                if f.name not in self.__dict__:
                    object.__setattr__(self, f.name, getattr(full, f.name))
            object.__setattr__(self, "_build", None)
            return True


class Stopped(Exception):
    """Building a PendingModule's tables was given up (its `stop` said so)."""


def _never() -> bool:
    return False
