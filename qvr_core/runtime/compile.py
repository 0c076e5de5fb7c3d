"""Compile a CheckedModule into torch modules.

The compiler reads the checker's facts and re-derives none: the type of
every sub-expression (`expr_types`), which scans read right to left
(`reversed_scans`), which fan branches get the reversed sequence
(`reversed_branches`, the bidirectional convention), each site's input
and value types, each morphism's validated options. Where the checker's
types say a morphism `A -> B` meets a sequence `[A]` (a `>>` whose type
starts with a sequence, a site whose value is a sequence) the part is
wrapped in `Lift`.

A declared morphism is compiled once per compiler, so every use shares its
parameters; each copy of a `stack` is compiled afresh with a key suffix
(`block__stack0_1`: copy 1 of the first `stack` in the file), so copies are
independent of each other and of uses outside the stack.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from qvr_core.check.module import CheckedModule, MorphismInfo, SiteInfo
from qvr_core.check.nesting import MAX_INLINED_DEPTH, Uses, inlined_depths
from qvr_core.check.types import Arrow, Group, Seq
from qvr_core.runtime.combinators import (
    Compose,
    Definition,
    Fan,
    Lift,
    Repeat,
    Scan,
    Stack,
    TensorProduct,
)
from qvr_core.runtime.errors import QvrError, format_diagnostics
from qvr_core.runtime.morphisms import Embed, Identity, Kernel, Latent, Leaf, Morphism
from qvr_core.runtime.program import ProgramModule
from qvr_core.syntax import ast


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
        self._stack_ids = {c: j for j, c in enumerate(_stack_calls(checked.ast))}
        self._leaves: dict[str, Leaf] = {}
        self._lets: dict[tuple[str, str], Morphism] = {}
        self._programs: dict[tuple[str, str], ProgramModule] = {}
        top = {d.name.text: d for d in checked.ast.decls if isinstance(d, Uses)}
        self._depths = inlined_depths(list(top.values()), top)

    def _within_depth(self, name: str) -> None:
        """Refuse a program or let whose forward pass would nest deeper than documented."""
        depth = self._depths.get(name, 0)
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
        if name in self.checked.programs:
            self._refuse_oversized(name)
            return self.program(name)
        if name in self.checked.lets:
            body = self.let(name)
            return Definition(name, body, _leaves_of(body))
        known = ", ".join((*self.checked.programs, *self.checked.lets)) or "none"
        raise QvrError(f"no program or let named '{name}' (programs and lets: {known})")

    def _refuse_oversized(self, name: str) -> None:
        """Refuse, before allocating any, parameters that do not fit in memory at all."""
        from qvr_core.resources import default_budget, estimate, format_bytes

        if self.checked.programs[name].type is None:
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

    def program(self, name: str, suffix: str = "") -> ProgramModule:
        key = (name, suffix)
        if key not in self._programs:
            self._within_depth(name)
            info = self.checked.programs[name]
            sites = {s.name: self._site(s, suffix) for s in info.sites}
            leaves: dict[str, Leaf] = {}
            for module in sites.values():
                leaves.update(_leaves_of(module))
            self._programs[key] = ProgramModule(info, sites, leaves)
        return self._programs[key]

    def let(self, name: str, suffix: str = "") -> Morphism:
        key = (name, suffix)
        if key not in self._lets:
            self._within_depth(name)
            self._lets[key] = self.expr(self.checked.lets[name].decl.expr, suffix)
        return self._lets[key]

    # -------------------------------------------------------- expressions

    def expr(self, node: ast.Arg, suffix: str = "") -> Morphism:
        if isinstance(node, ast.NameRef):
            return self._name(node.name.text, suffix)
        if isinstance(node, ast.Compose):
            return self._compose(node, suffix)
        if isinstance(node, ast.Tensor):
            parts = [self.expr(node.left, suffix), self.expr(node.right, suffix)]
            return TensorProduct(self._arrow(node), self._label(node), parts)
        if isinstance(node, ast.Call):
            return self._call(node, suffix)
        raise QvrError(f"expected a morphism, found {self._label(node)}")

    def _name(self, name: str, suffix: str) -> Morphism:
        resolved = self.checked.resolve_morphism(name)
        if resolved is not None:
            info, index = resolved
            if info.replicate and index is None:
                raise QvrError(f"{name} is a replicate group; only fan({name}) can use it")
            return self.leaf(info, index, suffix)
        if name in self.checked.lets:
            return self.let(name, suffix)
        if name in self.checked.programs:
            return self.program(name, suffix)
        raise QvrError(f"'{name}' is not a morphism, let or program")

    def _compose(self, node: ast.Compose, suffix: str) -> Morphism:
        t = self._arrow(node)
        left = self.expr(node.left, suffix)
        right = self.expr(node.right, suffix)
        if isinstance(t.dom, Seq) and not isinstance(left.dom, Seq):
            left = Lift(left)
        if isinstance(left.cod, Seq) and not isinstance(right.dom, Seq):
            right = Lift(right)
        return Compose(t, self._label(node), [left, right])

    def _call(self, node: ast.Call, suffix: str) -> Morphism:
        build = COMBINATOR_BUILDERS.get(node.callee.text)
        if build is None:
            raise QvrError(f"{self._label(node)}: '{node.callee.text}' is not a combinator")
        return build(self, node, self._arrow(node), suffix)

    def _scan(self, node: ast.Call, t: Arrow, suffix: str) -> Morphism:
        cell = self.expr(node.args[0], suffix)
        return Scan(t, self._label(node), cell, reverse=node in self.checked.reversed_scans)

    def _stack(self, node: ast.Call, t: Arrow, suffix: str) -> Morphism:
        j = self._stack_ids[node]
        copies = [
            self.expr(node.args[0], f"{suffix}__stack{j}_{i}") for i in range(_count(node.args[1]))
        ]
        return Stack(t, self._label(node), copies)

    def _repeat(self, node: ast.Call, t: Arrow, suffix: str) -> Morphism:
        body = self.expr(node.args[0], suffix)
        return Repeat(t, self._label(node), body, _count(node.args[1]))

    def _identity(self, node: ast.Call, t: Arrow, suffix: str) -> Morphism:
        return Identity(t, self._label(node))

    def _fan(self, node: ast.Call, t: Arrow, suffix: str) -> Morphism:
        args = [a for a in node.args if isinstance(a, ast.Expr)]
        group = self.checked.expr_types.get(args[0]) if len(args) == 1 else None
        if isinstance(group, Group):
            assert isinstance(args[0], ast.NameRef)
            info, _ = self.checked.resolve_morphism(args[0].name.text) or (None, None)
            assert info is not None and info.replicate
            branches: list[Morphism] = [self.leaf(info, i, suffix) for i in range(info.replicate)]
        else:
            branches = [self.expr(a, suffix) for a in args]
        if isinstance(t.dom, Seq):
            branches = [b if isinstance(b.dom, Seq) else Lift(b) for b in branches]
        reversed_branches = self.checked.reversed_branches.get(node, frozenset())
        return Fan(t, self._label(node), branches, frozenset(reversed_branches))

    # --------------------------------------------------------------- leaves

    def leaf(self, info: MorphismInfo, index: int | None, suffix: str = "") -> Leaf:
        """The module of a declared morphism (or replicated copy), made once per key."""
        base = info.name if index is None else f"{info.name}_{index}"
        key = base + suffix
        if key not in self._leaves:
            self._leaves[key] = _make_leaf(key, info)
        return self._leaves[key]

    # ---------------------------------------------------------------- sites

    def _site(self, site: SiteInfo, suffix: str) -> Morphism:
        module = self.expr(site.source, suffix)
        if isinstance(site.value_type, Seq) and not isinstance(module.cod, Seq):
            module = Lift(module)
        return module

    # -------------------------------------------------------------- helpers

    def _arrow(self, node: ast.Expr) -> Arrow:
        t = self.checked.expr_types.get(node)
        if not isinstance(t, Arrow):
            raise QvrError(f"{self._label(node)}: the checker recorded no type for it")
        return t

    def _label(self, node: ast.Arg) -> str:
        return self.checked.source[node.span.start : node.span.end]


def _make_leaf(key: str, info: MorphismInfo) -> Leaf:
    if info.role == "embed":
        return Embed(key, info.type)
    if info.role == "latent":
        return Latent(key, info.type)
    if info.role == "kernel" and info.family is not None:
        return Kernel(
            key,
            info.type,
            info.family,
            param_source=info.param_source,
            hidden_dim=info.hidden_dim,
            rank=info.rank,
            scale=info.scale,
        )
    raise QvrError(f"morphism {info.name} has no role the runtime can compile ({info.role})")


#: How each combinator of the registry (`qvr_core.builtins.COMBINATORS`) is compiled.
COMBINATOR_BUILDERS: dict[str, Callable[[Compiler, ast.Call, Arrow, str], Morphism]] = {
    "fan": Compiler._fan,
    "scan": Compiler._scan,
    "stack": Compiler._stack,
    "repeat": Compiler._repeat,
    "identity": Compiler._identity,
}


def _count(node: ast.Arg) -> int:
    assert isinstance(node, ast.Literal) and node.kind == "int"
    return int(node.value)


def _leaves_of(module: Morphism) -> dict[str, Leaf]:
    return {m.key: m for m in module.modules() if isinstance(m, Leaf)}


def _stack_calls(module: ast.Module) -> list[ast.Call]:
    """Every `stack(...)` call in the file, in source order (numbers the copies' keys)."""
    found = [n for n in _walk(module) if isinstance(n, ast.Call) and n.callee.text == "stack"]
    return sorted(found, key=lambda c: c.span.start)


def _walk(root: object) -> Iterator[object]:
    """Every syntax node under `root` (its own stack: no depth overflows Python's)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(reversed(node))
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            yield node
            stack.extend(getattr(node, f.name) for f in reversed(dataclasses.fields(node)))


def compile_module(checked: CheckedModule, name: str | None = None) -> Morphism:
    """Compile one export (default: the first) of a checked module."""
    return Compiler(checked).export(name)
