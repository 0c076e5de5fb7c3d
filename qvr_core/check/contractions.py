"""The `contraction` declaration, checked as quivers' compiler checks it.

`contraction bilinear_score (p : Item -> PredDim, a : Item -> ArgDim, w : (PredDim *
ArgDim) -> Judgment) : Item -> Judgment [rule=real]` declares an n-ary contraction
(quivers 0.25.2, `dsl/compiler/programs.py` `_compile_contraction`; its guide
`dsl-contractions.md`). What quivers refuses when it compiles the file is reported
where it is written:

- an option other than `rule`, `wiring`, `share` (QVR303); `rule=` missing (QVR316);
  a rule outside the registry (QVR101, looked up lower-cased, with did-you-mean);
  `rule=` not a name, `wiring=` not a string, `share=` not names (QVR304);
- a wiring that cannot be inferred (an axis in one input only that is neither kept
  nor shared, an axis twice in one input) or an explicit one `EinsumWiring` refuses,
  or whose number of inputs is not the parameters' (QVR316).

What quivers refuses only when a call runs (`EinsumWiring.apply`, the result's
`ObservedMorphism`) is reported at the declaration too, since every call fails: an
input's letters that are not as many as its axes, one letter over axes of two sizes,
an output whose letters do not give the declared output type (QVR316). An axis is
one finite set (QVR307 for a continuous object: a contraction combines relations
between finite sets); an object that names a product has as many tensor axes as
factors but one letter in quivers' wiring, so every call fails (QVR316). A signature
with an object expression the checker does not type keeps the names-only check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

from qvr_core.builtins.algebras import ALGEBRAS
from qvr_core.check.context import suggest
from qvr_core.check.declarations import resolve_type
from qvr_core.check.types import Arrow, Product, dims_text
from qvr_core.check.unchecked import note, refer
from qvr_core.check.wiring import (
    CONTRACTION,
    CONTRACTION_OPTIONS,
    Contraction,
    Param,
    Wiring,
    infer_wiring,
    parse_wiring,
)
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.context import Context


def is_contraction(decl: ast.Decl | None) -> TypeGuard[ast.OtherDecl]:
    return isinstance(decl, ast.OtherDecl) and decl.clause.kind == CONTRACTION


def check_contraction(ctx: Context, decl: ast.OtherDecl) -> Contraction | None:
    """Check one contraction where it is written; its record, or None when quivers
    would refuse it (reported), it keeps the names-only check, or it is a duplicate."""
    own = frozenset(id(n) for n in decl.names)
    if ctx.top.get(decl.name.text) is not decl:
        refer(ctx, decl.clause, own)  # a duplicate is reported where it is
        return None
    parts = decl.clause.parts
    inputs = [p for p in parts if isinstance(p, ast.Clause) and p.kind == "contraction_input"]
    sides = [p for p in parts[1:] if not isinstance(p, ast.Clause | ast.Option | ast.Name)]
    types = [*(t for c in inputs for t in c.parts[1:3]), *sides]
    if len(sides) != 2 or not all(type(t) is ast.TypeRef for t in types):
        refer(ctx, decl.clause, own)
        note(ctx, decl.name.span, f"contraction {decl.name.text} (its signature's objects)")
        return None
    return _Checking(ctx, decl, inputs, (sides[0], sides[1])).run()  # type: ignore[arg-type]  # TypeRefs, checked above


class _Checking:
    def __init__(
        self,
        ctx: Context,
        decl: ast.OtherDecl,
        inputs: list[ast.Clause],
        output: tuple[ast.TypeRef, ast.TypeRef],
    ) -> None:
        self.ctx = ctx
        self.decl = decl
        self.inputs = inputs
        self.output = output
        self.sizes: dict[str, int] = {}  # each axis name's size, once resolved
        self.label = f"contraction {decl.name.text}"

    def run(self) -> Contraction | None:
        ctx = self.ctx
        options = self._options()
        rule = self._rule(options.get("rule"))
        params: list[Param] = []
        ok = True
        for clause in self.inputs:
            name = clause.parts[0]
            assert isinstance(name, ast.Name)
            t = self._arrow(clause.parts[1], clause.parts[2])  # type: ignore[arg-type]  # TypeRefs (check_contraction)
            if t is None:
                ok = False
                continue
            axes = self._axes(clause.parts[1], clause.parts[2])  # type: ignore[arg-type]  # as above
            params.append(Param(name.text, t, axes))
            ctx.record_type(name.span, t, f"input of {self.label}")
        out = self._arrow(*self.output)
        if out is None or not ok:
            return None
        wiring = self._wiring(options, params, self._axes(*self.output))
        if rule is None or wiring is None:
            return None
        found = Contraction(
            self.decl.name.text, rule, tuple(params), out, wiring, "wiring" not in options
        )
        ctx.record_type(self.decl.name.span, out, found.summary())
        return found

    # ------------------------------------------------------------ options

    def _options(self) -> dict[str, ast.Option]:
        """The options by key, the first of each; an unknown key (QVR303) and a repeated
        one (QVR305) are reported."""
        found: dict[str, ast.Option] = {}
        for part in self.decl.clause.parts:
            if not isinstance(part, ast.Option):
                continue
            key = part.key.text
            if key not in CONTRACTION_OPTIONS:
                close = suggest(key, list(CONTRACTION_OPTIONS))
                meant = f"; did you mean '{close[0]}'?" if close else ""
                self.ctx.report(
                    rules.UNKNOWN_OPTION,
                    f"{self.label} takes the options {', '.join(CONTRACTION_OPTIONS)}; "
                    f"'{key}' is not one{meant}",
                    part.key.span,
                )
            elif key in found:
                self.ctx.report(
                    rules.DUPLICATE_OPTION, f"the option {key} is given twice", part.key.span
                )
            else:
                found[key] = part
        return found

    def _rule(self, option: ast.Option | None) -> str | None:
        """The registry's name of `rule=`, as quivers looks it up (lower-cased)."""
        ctx = self.ctx
        if option is None:
            ctx.report(
                rules.COMPOSITION_RULE,
                f"{self.label} needs `rule=NAME`, the composition rule it contracts under "
                f"({', '.join(sorted(ALGEBRAS))})",
                self.decl.name.span,
            )
            return None
        value = option.value
        if not (isinstance(value, ast.Literal) and value.kind == "name"):
            self._bad_value(option, "a rule's name (`rule=real`)")
            return None
        written = str(value.value)
        if written.lower() not in ALGEBRAS:
            ctx.did_you_mean(
                rules.UNDEFINED_NAME,
                f"{self.label}: unknown composition rule '{written}'",
                value.span,
                written,
                list(ALGEBRAS),
                otherwise=f": the registered rules are {', '.join(sorted(ALGEBRAS))}",
            )
            return None
        return written.lower()

    def _bad_value(self, option: ast.Option, expect: str) -> None:
        shown = self.ctx.source(option.value.span) if option.value is not None else "no value"
        self.ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"the option {option.key.text} of {self.label} takes {expect}, not {shown}",
            option.value.span if option.value is not None else option.span,
        )

    def _shared(self, option: ast.Option | None) -> tuple[str, ...] | None:
        """`share=[A, B]` or `share=A` (quivers lifts one name to a list)."""
        if option is None:
            return ()
        value = option.value
        items = value.items if isinstance(value, ast.ValueList) else (value,)
        if not all(isinstance(i, ast.Literal) and i.kind == "name" for i in items):
            self._bad_value(option, "object names (`share=[A, B]`)")
            return None
        return tuple(str(i.value) for i in items if isinstance(i, ast.Literal))

    # ------------------------------------------------------------ types

    def _arrow(self, dom: ast.TypeRef, cod: ast.TypeRef) -> Arrow | None:
        sides = (resolve_type(self.ctx, dom), resolve_type(self.ctx, cod))
        ok = True
        for side, ref in zip(sides, (dom, cod), strict=True):
            if side is None:
                ok = False
                continue
            ok = self._finite(side, ref) and ok
        if not ok or sides[0] is None or sides[1] is None:
            return None
        return Arrow(sides[0], sides[1])

    def _finite(self, side: Product, ref: ast.TypeRef) -> bool:
        """Every axis one finite set: a continuous object has no axis of a relation, and
        a name of a product has one letter for several tensor axes."""
        ctx = self.ctx
        if not side.discrete:
            ctx.report(
                rules.ROLE_TYPE_MISMATCH,
                f"{self.label} contracts relations between finite sets, but {side.label} is "
                f"{dims_text(side)}",
                ref.span,
            )
            return False
        for name in ref.factors:
            found = ctx.aliases.get(name.text)
            if found is not None and len(found.factors) != 1:
                ctx.report(
                    rules.COMPOSITION_RULE,
                    f"{self.label}: {name.text} names {found.label}, {len(found.factors)} axes "
                    f"of a tensor but one axis of quivers' wiring, so every call fails; "
                    f"write its factors ({found.label})",
                    name.span,
                )
                return False
            size = (found.factors[0] if found is not None else ctx.objects[name.text]).size
            self.sizes[name.text] = size
        return True

    def _axes(self, dom: ast.TypeRef, cod: ast.TypeRef) -> tuple[str, ...]:
        return tuple(n.text for n in (*dom.factors, *cod.factors))

    # ------------------------------------------------------------ wiring

    def _wiring(
        self, options: dict[str, ast.Option], params: list[Param], output: tuple[str, ...]
    ) -> Wiring | None:
        ctx = self.ctx
        written = options.get("wiring")
        shared = self._shared(options.get("share"))
        if shared is None:
            return None
        text: str | None = None
        if written is not None:
            value = written.value
            if not (isinstance(value, ast.Literal) and value.kind == "string"):
                self._bad_value(written, 'an einsum string (`wiring="ab, bc -> ac"`)')
                return None
            text = str(value.value)
        if text:  # quivers reads an empty string as no wiring
            assert written is not None and written.value is not None
            at = written.value.span
            found = parse_wiring(text)
        else:
            at = self.decl.name.span
            found = infer_wiring([p.axes for p in params], output, shared)
        if isinstance(found, str):
            how = "" if text else "cannot infer its wiring from the signature: "
            ctx.report(rules.COMPOSITION_RULE, f"{self.label}: {how}{found}", at)
            return None
        if not self._fits(found, params, output, at):
            return None
        return found

    def _fits(self, wiring: Wiring, params: list[Param], output: tuple[str, ...], at: Span) -> bool:
        """The wiring against the signature: as many inputs as parameters (quivers refuses
        the declaration), each input's letters one per axis, a letter one size, the
        output's letters the declared output's axes (quivers fails at every call)."""
        ctx = self.ctx
        if len(wiring.inputs) != len(params):
            ctx.report(
                rules.COMPOSITION_RULE,
                f"{self.label}: the wiring `{wiring.spec}` has {len(wiring.inputs)} inputs "
                f"but the declaration {len(params)} parameters",
                at,
            )
            return False
        size: dict[str, tuple[int, str]] = {}
        for spec, param in zip(wiring.inputs, params, strict=True):
            if len(spec) != len(param.axes):
                ctx.report(
                    rules.COMPOSITION_RULE,
                    f"{self.label}: the wiring gives {param.name} the letters {spec!r}, "
                    f"{len(spec)} axes, but {param.name} : {param.type.label} has "
                    f"{len(param.axes)}",
                    at,
                )
                return False
            for ch, axis in zip(spec, param.axes, strict=True):
                n = self.sizes[axis]
                first = size.setdefault(ch, (n, f"{axis} of {param.name}"))
                if first[0] != n:
                    ctx.report(
                        rules.COMPOSITION_RULE,
                        f"{self.label}: the wiring's letter {ch!r} is {first[1]} ({first[0]} "
                        f"values) and {axis} of {param.name} ({n} values)",
                        at,
                    )
                    return False
        shape = tuple(size[ch][0] for ch in wiring.output)
        declared = tuple(self.sizes[a] for a in output)
        if shape != declared:
            ctx.report(
                rules.COMPOSITION_RULE,
                f"{self.label}: the wiring's output {wiring.output!r} has the sizes "
                f"{_sizes(shape)}, but the declared output {' * '.join(output)} has "
                f"{_sizes(declared)}",
                at,
            )
            return False
        return True


def _sizes(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ")"
