"""Family steps in a program that applies morphisms: `sample h <- Normal(r, 0.5)`.

quivers' meaning: a number family applied to a value of an object draws one
coordinate per entry ("the argument's axes being the plate"), so the draw is a
value of that object (`r : Hidden` gives `h : Hidden`). Its parameters are
numbers written in the step or named values of the program; several named
values are read entry by entry, so they have one dimension. Such a step is a
site like a morphism application: its "morphism" takes the named values packed
side by side (`SiteInfo.args`) to the drawn value, and the runtime draws from
the family with the numbers fixed (`qvr_core.runtime.family_draw`).

Which steps qualify is `unchecked.seed_family`; the model checker
(`model_steps.py`) types every program it can before this one is asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from qvr_core.builtins import FAMILIES, bind, resolved
from qvr_core.check.declarations import report_binding, report_constraint
from qvr_core.check.expressions import product
from qvr_core.check.matching import related_objects
from qvr_core.check.types import Arrow, Product, Scalar, Seq, ValueType, dims_text
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.passes import ProgramPass


@dataclass(frozen=True)
class FamilyDraw:
    """A typed family step: the named values it reads (in order of first reading), the
    arrow from them packed to the drawn value, and each parameter as a number or a name."""

    args: tuple[str, ...]
    arrow: Arrow | None
    params: tuple[tuple[str, float | str], ...]


def family_draw(pc: ProgramPass, call: ast.Call) -> FamilyDraw:
    """Type the family step `call` of the program `pc` checks (its diagnostics reported)."""
    family = resolved(FAMILIES[call.callee.text])
    ctx = pc.ctx
    keywords = {kw.key.text: kw.value for kw in call.kwargs}
    bound = bind(family, list(call.args), keywords)
    if isinstance(bound, str):
        report_binding(ctx, family, bound, call.span)
        for a in (*call.args, *keywords.values()):
            if isinstance(a, ast.NameRef):
                pc.lookup(a.name)
        return FamilyDraw((), None, ())
    schema, values = bound
    numbers = {k: float(v.value) for k, v in values.items() if isinstance(v, ast.Literal)}
    params: list[tuple[str, float | str]] = []
    names: dict[str, ValueType | None] = {}
    ok = True
    for p in schema:
        node = values.get(p.name)
        if node is None:
            continue  # a default: the runtime's family has it
        if isinstance(node, ast.Literal):
            v = float(node.value)
            if p.constraint.admits(v, numbers) is False:
                report_constraint(ctx, family, p, ctx.source(node.span), node.span)
                ok = False
            params.append((p.name, v))
            continue
        assert isinstance(node, ast.NameRef)  # seed_family admits numbers and names only
        t = pc.lookup(node.name)
        if node.name.text not in names:
            names[node.name.text] = t
        params.append((p.name, node.name.text))
        ok = _numeric(pc, family.name, p.name, node, t) and ok
    args = tuple(names)
    types = [t for t in names.values() if t is not None]
    if not ok or len(types) != len(names):
        return FamilyDraw(args, None, tuple(params))
    value = _common(pc, call, types)
    if value is None:
        return FamilyDraw(args, None, tuple(params))
    elem = value.elem if isinstance(value, Seq) else value
    assert isinstance(elem, Product)  # _numeric: products of objects
    outside = [f for f in elem.factors if not family.fits(f.kind, f.size)]
    if outside:
        f = outside[0]
        ctx.report(
            rules.FAMILY_SUPPORT,
            f"{family.name} draws {family.support.describe()} per coordinate, but its draw here "
            f"is a value of {elem.label} ({dims_text(elem)}), and {f.name} is {f.describe()}: "
            f"use a family whose draws are values of {f.name}",
            call.callee.span,
            related=related_objects(ctx, elem),
        )
        return FamilyDraw(args, None, tuple(params))
    if len(types) == 1:
        packed: ValueType = types[0]
    elif isinstance(value, Seq):
        packed = Seq(product(*(t.elem for t in types)))  # type: ignore[union-attr]  # Seqs: _common
    else:
        packed = product(*types)  # type: ignore[arg-type]  # Products: _common
    arrow = Arrow(packed, value)
    ctx.record_type(call.span, arrow, f"{family.name}: one draw per coordinate")
    return FamilyDraw(args, arrow, tuple(params))


def _numeric(
    pc: ProgramPass, family: str, param: str, node: ast.NameRef, t: ValueType | None
) -> bool:
    """A named parameter is a value of continuous objects (or a sequence of them)."""
    if t is None:
        return False
    elem = t.elem if isinstance(t, Seq) else t
    if isinstance(elem, Product) and elem.continuous:
        return True
    what = "a number" if isinstance(t, Scalar) else f"{elem.label} ({dims_text(elem)})"
    pc.ctx.report(
        rules.DISCRETE_CONTINUOUS if isinstance(elem, Product) else rules.FAMILY_ARGUMENTS,
        f"{param}={node.name.text} of {family} is {what}: a family step here reads values of "
        "continuous objects, one draw per coordinate (write a number as a number)",
        node.span,
    )
    return False


def _common(pc: ProgramPass, call: ast.Call, types: list[ValueType]) -> ValueType | None:
    """The drawn value's type: the first named value's, which the others must match in
    dimension (read entry by entry), all sequences or none."""
    first = types[0]
    if any(isinstance(t, Seq) != isinstance(first, Seq) for t in types):
        pc.ctx.report(
            rules.SEQUENCE_MISMATCH,
            f"{call.callee.text} reads its named values entry by entry: a sequence pairs "
            "only with sequences",
            call.span,
        )
        return None
    e0 = first.elem if isinstance(first, Seq) else first
    for t in types[1:]:
        e = t.elem if isinstance(t, Seq) else t
        assert isinstance(e, Product) and isinstance(e0, Product)  # _numeric: products
        if e.dim != e0.dim:
            pc.ctx.report(
                rules.ARITHMETIC_DIMENSIONS,
                f"{call.callee.text} reads its named values entry by entry, but they have "
                f"{dims_text(e0)} and {dims_text(e)}: give them equal dimensions, or a number",
                call.span,
                related=related_objects(pc.ctx, e0, e),
            )
            return None
    return first
