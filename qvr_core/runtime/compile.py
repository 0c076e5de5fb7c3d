"""Compile a CheckedModule into torch modules.

The compiler reads the checker's facts and re-derives none; it compiles the
module lowered for it (`qvr_core.check.lowered`), never the syntax tree: the
type of every sub-expression, which scans read right to left, which fan
branches get the reversed sequence (the bidirectional convention), each
site's input and value types, each morphism's validated options. Where the
checker's types say a morphism `A -> B` meets a sequence `[A]` (a `>>` whose
type starts with a sequence, a site whose value is a sequence) the part is
wrapped in `Lift`.

A declared morphism is compiled once per compiler, so every use shares its
parameters; each copy of a `stack` is compiled afresh with a key suffix
(`block__stack0_1`: copy 1 of the first `stack` in the file), so copies are
independent of each other and of uses outside the stack.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from qvr_core.builtins import COMBINATORS
from qvr_core.builtins.families import FLOW
from qvr_core.check import lowered as ir
from qvr_core.check.lowered import lower_module
from qvr_core.check.module import CheckedModule, ModuleAlgebra, MorphismInfo
from qvr_core.check.nesting import MAX_INLINED_DEPTH
from qvr_core.check.types import Arrow, Seq
from qvr_core.runtime.attention import Attention
from qvr_core.runtime.chart_parser import ChartParser
from qvr_core.runtime.combinators import (
    Compose,
    Definition,
    Fan,
    Lift,
    Repeat,
    Scan,
    ScanAll,
    Stack,
    TensorProduct,
)
from qvr_core.runtime.discretize import Discretize
from qvr_core.runtime.errors import QvrError, format_diagnostics
from qvr_core.runtime.family_draw import FamilyDraw
from qvr_core.runtime.flows import Flow
from qvr_core.runtime.morphisms import Embed, Identity, Kernel, Latent, Leaf, Morphism
from qvr_core.runtime.program import ProgramModule
from qvr_core.runtime.relations import (
    Contracted,
    Curried,
    Dagger,
    Marginalized,
    Relation,
    Transformed,
    relation,
    rule_of,
)

if TYPE_CHECKING:
    import torch

    from qvr_core.check.chart_grammar import ChartGrammar


class Compiler:
    """Compiles the programs and lets of one checked module, sharing declared morphisms."""

    def __init__(
        self, checked: CheckedModule, path: str | None = None, memory_budget: int | None = None
    ) -> None:
        if not checked.ok:
            raise QvrError(
                f"{path or 'the source'} has errors:\n" + format_diagnostics(checked.errors, path),
                checked.errors,
                path,
            )
        self.checked = checked
        self.memory_budget = memory_budget  # bytes of parameters allowed (None: the default)
        self.lowered = lower_module(checked)
        self._leaves: dict[str, Leaf] = {}
        self._lets: dict[tuple[str, str], Morphism] = {}
        self._programs: dict[tuple[str, str], ProgramModule] = {}

    def _within_depth(self, name: str) -> None:
        """Refuse a program or let whose forward pass would nest deeper than documented."""
        depth = self.lowered.depths.get(name, 0)
        if depth > MAX_INLINED_DEPTH:
            raise QvrError(
                f"{name} is nested too deeply to run: {depth} levels with the lets and programs"
                f" it uses put in place (at most {MAX_INLINED_DEPTH}); use fewer lets in a chain,"
                " or stack(...) / repeat(...) for repeated layers"
            )

    # ------------------------------------------------------------ entries

    def export(self, name: str | None = None) -> Morphism:
        """An exported program (a ProgramModule) or let (a morphism); default: the first."""
        name = name or self.checked.default_export
        if name is None:
            raise QvrError("the source exports nothing: add `export NAME`")
        if name in self.lowered.programs:
            self._refuse_oversized(name)
            return self.program(name)
        if name in self.lowered.lets:
            body = self.let(name)
            if isinstance(body, ChartParser):  # called as quivers calls its parser
                return body
            return Definition(name, body, _leaves_of(body))
        known = ", ".join((*self.lowered.programs, *self.lowered.lets)) or "none"
        raise QvrError(f"no program or let named '{name}' (programs and lets: {known})")

    def _refuse_oversized(self, name: str) -> None:
        """Refuse, before allocating any, parameters that do not fit in memory at all."""
        from qvr_core.sizing.resources import default_budget, estimate
        from qvr_core.text.units import format_bytes

        if self.lowered.programs[name].type is None:
            return
        need = estimate(self.checked, name, method="prior", batch=1, seq_len=1, steps=1)
        budget = self.memory_budget if self.memory_budget is not None else default_budget()
        if need.parameter_bytes > budget:
            culprit = need.culprit(budget, kind="parameters")
            why = f": {culprit.describe()}" if culprit is not None else ""
            raise QvrError(
                f"program {name} has {need.parameters:,} parameters "
                f"({format_bytes(need.parameter_bytes)}), more than the memory budget of "
                f"{format_bytes(budget)}{why}"
            )

    def _refuse_oversized_parser(self, name: str, grammar: ChartGrammar) -> None:
        """Refuse, before allocating it, a chart parser whose lexicon does not fit in memory
        (a row of logits per token and a column per category)."""
        from qvr_core.sizing.resources import default_budget
        from qvr_core.text.units import format_bytes

        need = ChartParser.bytes_for(grammar)
        budget = self.memory_budget if self.memory_budget is not None else default_budget()
        if need > budget:
            raise QvrError(
                f"chart parser {name} has {grammar.parameters:,} parameters "
                f"({format_bytes(need)}: {grammar.terminals:,} tokens x "
                f"{len(grammar.categories):,} categories), more than the memory budget of "
                f"{format_bytes(budget)}"
            )

    def program(self, name: str, suffix: str = "") -> ProgramModule:
        key = (name, suffix)
        if key not in self._programs:
            self._within_depth(name)
            program = self.lowered.programs[name]
            _refuse_unrunnable(program)
            sites = {s.name: self._site(s, suffix) for s in program.sites}
            leaves: dict[str, Leaf] = {}
            for module in sites.values():
                leaves.update(_leaves_of(module))
            for leaf in leaves.values():
                if isinstance(leaf, Relation):  # a tensor of the algebra, not a kernel
                    raise QvrError(f"program {name} cannot run: {leaf.refusal()}")
            self._programs[key] = ProgramModule(program, sites, leaves)
        return self._programs[key]

    def let(self, name: str, suffix: str = "") -> Morphism:
        key = (name, suffix)
        if key not in self._lets:
            self._within_depth(name)
            self._lets[key] = self.expr(self.lowered.lets[name], suffix)
        return self._lets[key]

    # -------------------------------------------------------- expressions

    def expr(self, node: ir.Expr, suffix: str = "") -> Morphism:
        match node:
            case ir.Named(name=name):
                return self._name(name, suffix)
            case ir.Composed():
                return self._compose(node, suffix)
            case ir.Tensored(left=left, right=right):
                parts = [self.expr(left, suffix), self.expr(right, suffix)]
                return TensorProduct(_arrow(node), node.label, parts)
            case ir.Combinator():
                return self._call(node, suffix)
            case ir.Transposed(part=part):
                return Dagger(_arrow(node), node.label, self.expr(part, suffix))
            case ir.Transformed(part=part, steps=steps):
                priors = {
                    i: self.expr(step.prior, suffix)
                    for i, step in enumerate(steps)
                    if step.prior is not None
                }
                plain = tuple((step.name, step.axis) for step in steps)
                inner = self.expr(part, suffix)
                return Transformed(_arrow(node), node.label, inner, plain, priors)
            case ir.Curried(part=part, direction=direction):
                return Curried(_arrow(node), node.label, self.expr(part, suffix), direction)
            case ir.Marginalized(part=part, drop=drop):
                return Marginalized(_arrow(node), node.label, self.expr(part, suffix), drop)
            case ir.Contracted(contraction=found, parts=parts):
                inputs = [self.expr(p, suffix) for p in parts]
                return Contracted(_arrow(node), node.label, found, inputs)
            case ir.Parsed(type=t, label=label, grammar=grammar):
                self._refuse_oversized_parser(label, grammar)
                return ChartParser(t, label, grammar)
            case ir.Opaque(label=label):
                raise QvrError(f"expected a morphism, found {label}")
            case ir.FamilyDraw():
                return FamilyDraw(
                    node.type, node.label, node.family, node.parts, node.given, node.fed
                )

    def _name(self, name: str, suffix: str) -> Morphism:
        resolved = self.checked.resolve_morphism(name)
        if resolved is not None:
            info, index = resolved
            if info.replicate and index is None:
                raise QvrError(f"{name} is a replicate group; only fan({name}) can use it")
            return self.leaf(info, index, suffix)
        if name in self.lowered.lets:
            return self.let(name, suffix)
        if name in self.lowered.programs:
            return self.program(name, suffix)
        raise QvrError(f"'{name}' is not a morphism, let or program")

    def _compose(self, node: ir.Composed, suffix: str) -> Morphism:
        t = _arrow(node)
        left = self.expr(node.left, suffix)
        right = self.expr(node.right, suffix)
        if isinstance(t.dom, Seq) and not isinstance(left.dom, Seq):
            left = Lift(left)
        if isinstance(left.cod, Seq) and not isinstance(right.dom, Seq):
            right = Lift(right)
        return Compose(t, node.label, [left, right])

    def _call(self, node: ir.Combinator, suffix: str) -> Morphism:
        build = COMBINATOR_BUILDERS.get(node.name)
        if build is None:
            raise QvrError(f"{node.label}: '{node.name}' is not a combinator")
        return build(self, node, _arrow(node), suffix)

    def _scan(self, node: ir.Combinator, t: Arrow, suffix: str) -> Morphism:
        cell = self.expr(node.parts[0], suffix)
        return Scan(t, node.label, cell, node.reverse, node.learned_init)

    def _scanl(self, node: ir.Combinator, t: Arrow, suffix: str) -> Morphism:
        cell = self.expr(node.parts[0], suffix)
        return ScanAll(t, node.label, cell, node.reverse, node.learned_init)

    def _multihead(self, node: ir.Combinator, t: Arrow, suffix: str) -> Morphism:
        """Each of query, key, value as its heads: a replicate group's copies in order,
        or one morphism (one head); the registry says which attention it is."""
        queries, keys, values = (self._heads(part, suffix) for part in node.parts)
        kind = COMBINATORS[node.name].attention or "self"
        return Attention(t, node.label, queries, keys, values, kind=kind)

    _causal_multihead = _multihead
    _cross_multihead = _multihead

    def _heads(self, part: ir.Expr, suffix: str) -> list[Morphism]:
        if isinstance(part, ir.Named):
            resolved = self.checked.resolve_morphism(part.name)
            if resolved is not None and resolved[0].replicate and resolved[1] is None:
                info, count = resolved[0], resolved[0].replicate
                return [self.leaf(info, i, suffix) for i in range(count)]
        return [self.expr(part, suffix)]

    def _stack(self, node: ir.Combinator, t: Arrow, suffix: str) -> Morphism:
        j = node.ordinal
        copies = [
            self.expr(node.parts[0], f"{suffix}__stack{j}_{i}") for i in range(node.counts[0])
        ]
        return Stack(t, node.label, copies)

    def _repeat(self, node: ir.Combinator, t: Arrow, suffix: str) -> Morphism:
        body = self.expr(node.parts[0], suffix)
        return Repeat(t, node.label, body, node.counts[0])

    def _identity(self, node: ir.Combinator, t: Arrow, suffix: str) -> Morphism:
        return Identity(t, node.label)

    def _fan(self, node: ir.Combinator, t: Arrow, suffix: str) -> Morphism:
        if node.group is not None:
            info, _ = self.checked.resolve_morphism(node.group) or (None, None)
            assert info is not None and info.replicate
            branches: list[Morphism] = [self.leaf(info, i, suffix) for i in range(info.replicate)]
        else:
            branches = [self.expr(a, suffix) for a in node.parts]
        if isinstance(t.dom, Seq):
            branches = [b if isinstance(b.dom, Seq) else Lift(b) for b in branches]
        return Fan(t, node.label, branches, node.reversed_branches)

    # --------------------------------------------------------------- leaves

    def leaf(self, info: MorphismInfo, index: int | None, suffix: str = "") -> Leaf:
        """The module of a declared morphism (or replicated copy), made once per key."""
        base = info.name if index is None else f"{info.name}_{index}"
        key = base + suffix
        if key not in self._leaves:
            self._leaves[key] = _make_leaf(key, info, self.checked.algebra)
        return self._leaves[key]

    def relation(self, name: str) -> torch.Tensor:
        """The tensor of let `name` under the file's composition rule (`relations.py`):
        what quivers' `Program.forward()` gives for an exported finite-set morphism."""
        return relation(self.let(name), self.checked)

    # ---------------------------------------------------------------- sites

    def _site(self, site: ir.Site, suffix: str) -> Morphism:
        module = self.expr(site.source, suffix)
        if isinstance(site.value_type, Seq) and not isinstance(module.cod, Seq):
            module = Lift(module)
        return module


def _arrow(
    node: ir.Composed
    | ir.Tensored
    | ir.Combinator
    | ir.Transposed
    | ir.Curried
    | ir.Transformed
    | ir.Marginalized
    | ir.Contracted,
) -> Arrow:
    if node.type is None:
        raise QvrError(f"{node.label}: the checker recorded no type for it")
    return node.type


def _refuse_unrunnable(program: ir.Program) -> None:
    """Refuse a program with a `let` value the checker did not type (none passes a check)."""
    for step in program.steps:
        if isinstance(step, ir.LetValue | ir.Destructure) and step.value is None:
            raise QvrError(
                f"{program.name}: the let at line {step.line} computes a value that cannot run"
            )


def _make_leaf(key: str, info: MorphismInfo, algebra: ModuleAlgebra | None = None) -> Leaf:
    if info.role == "embed":
        return Embed(key, info.type)
    if info.role == "latent":
        if algebra is None:  # qvr's own reading: a row-stochastic matrix (see relations.py)
            return Latent(key, info.type, info.scale, info.init)
        rule_of(algebra)  # an inline body is refused here, with its line
        return Relation(key, info.type, algebra, info.scale, info.init)
    if info.role == "kernel" and info.family == FLOW:
        layers = dict(info.family_options).get("n_layers", 4)
        return Flow(key, info.type, int(layers), info.hidden_dim)
    if info.role == "kernel" and info.family is not None:
        return Kernel(
            key,
            info.type,
            info.family,
            param_source=info.param_source,
            hidden_dim=info.hidden_dim,
            rank=info.rank,
            scale=info.scale,
            given=info.given,
            network=info.network,
            draw=info.draw,
            family_options=info.family_options,
        )
    if info.role == "discretize" and info.bins is not None:
        return Discretize(key, info.type, info.bins)
    if info.role == "kernel":  # no family: quivers' table between finite sets, rows that
        # sum to 1 whatever the file's composition rule (its `StochasticMorphism`)
        return Latent(key, info.type, None, None)
    raise QvrError(f"morphism {info.name} has no role the runtime can compile ({info.role})")


#: How each combinator of the registry (`qvr_core.builtins.COMBINATORS`) is compiled.
#: The builder of combinator `c` is the method `Compiler._c` (a missing one fails here).
COMBINATOR_BUILDERS: dict[str, Callable[[Compiler, ir.Combinator, Arrow, str], Morphism]] = {
    name: getattr(Compiler, f"_{name}") for name in COMBINATORS
}


def _leaves_of(module: Morphism) -> dict[str, Leaf]:
    return {m.key: m for m in module.modules() if isinstance(m, Leaf)}


def compile_module(checked: CheckedModule, name: str | None = None) -> Morphism:
    """Compile one export (default: the first) of a checked module."""
    return Compiler(checked).export(name)
