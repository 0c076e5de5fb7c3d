"""Matching what one side produces against what the other expects.

The three rules of the language spec (section 3): same object names after
flattening; otherwise equal total dimension of continuous values (a hint,
an error under `strict`); otherwise a mismatch whose message shows both
sides with their structure and dimensions, and whose fixes change a
declared dimension or insert a projection morphism.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check.context import Context
from qvr_core.check.types import Product, dims_text, sum_text
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Fix, Related, TextEdit
from qvr_core.text.span import Span


@dataclass(frozen=True)
class Sides:
    """Who produces and who consumes, in the user's words, for messages."""

    producer: str
    consumer: str
    verb: str = "cannot compose"
    # where a projection morphism would be used: text inserted at this offset
    projection_at: int | None = None


def dims_paren(p: Product) -> str:
    """`64 + 64 = 128` for continuous values, `FinSet 256` style otherwise."""
    return sum_text(p) if p.continuous else dims_text(p)


def dimension_facts(produced: Product, expected: Product) -> tuple[tuple[str, str], ...]:
    """What a match by dimension paired, for editor hints: both sides and their dimensions."""
    return (
        ("produced", produced.label),
        ("produced_dims", dims_text(produced)),
        ("expected", expected.label),
        ("expected_dims", dims_text(expected)),
    )


def same_names(a: Product, b: Product) -> bool:
    return a.names == b.names


def reordered(a: Product, b: Product) -> bool:
    """The same factors in another order: equal dimensions, but the columns would mix."""
    return len(a.factors) > 1 and a.names != b.names and sorted(a.names) == sorted(b.names)


def match(ctx: Context, produced: Product, expected: Product, span: Span, sides: Sides) -> bool:
    """Report how `produced` fits `expected`; True when it fits (by name or by dimension)."""
    if same_names(produced, expected):
        return True
    related = related_objects(ctx, produced, expected)
    if reordered(produced, expected):
        ctx.report(
            rules.FACTORS_OUT_OF_ORDER,
            f"{sides.verb}: {sides.producer} produces {produced.label} ({dims_paren(produced)}) "
            f"but {sides.consumer} expects {expected.label} ({dims_paren(expected)}): the same "
            "factors in another order, which would mix up their columns",
            span,
            related=related,
        )
        return False
    if produced.continuous and expected.continuous and produced.dim == expected.dim:
        ctx.hint_or_error(
            rules.MATCHED_BY_DIMENSION,
            f"matched by dimension, not by name: {sides.producer} produces {produced.label} "
            f"({dims_paren(produced)}) and {sides.consumer} expects {expected.label} "
            f"({dims_paren(expected)})",
            span,
            related=related,
            data=dimension_facts(produced, expected),
        )
        return not ctx.strict
    if produced.continuous != expected.continuous:
        what_p = "a discrete value" if produced.discrete else "a continuous value"
        what_e = "a discrete one" if expected.discrete else "a continuous one"
        if not produced.discrete and not produced.continuous:
            what_p = "a mix of discrete and continuous values"
        if not expected.discrete and not expected.continuous:
            what_e = "a mix of discrete and continuous values"
        ctx.report(
            rules.DISCRETE_CONTINUOUS,
            f"{sides.verb}: {sides.producer} produces {produced.label} ({dims_text(produced)}), "
            f"{what_p}, but {sides.consumer} expects {expected.label} ({dims_text(expected)}), "
            f"{what_e}",
            span,
            related=related,
        )
        return False
    ctx.report(
        rules.DIMENSION_MISMATCH,
        f"{sides.verb}: {sides.producer} produces {produced.label} ({dims_paren(produced)}) "
        f"but {sides.consumer} expects {expected.label} ({dims_paren(expected)})",
        span,
        related=related,
        fixes=_dimension_fixes(ctx, produced, expected, sides),
    )
    return False


def related_objects(ctx: Context, *products: Product) -> tuple[Related, ...]:
    """Where each object named on either side is declared, with its constructor and size."""
    seen: list[str] = []
    out: list[Related] = []
    for p in products:
        for name in (*p.written, *p.names):
            if name in seen or name not in ctx.object_decls:
                continue
            seen.append(name)
            decl = ctx.object_decls[name]
            body = ctx.source(ctx.real(decl, decl.body.span))
            out.append(
                Related(ctx.real(decl, decl.name.span), f"{name} is declared here as {body}")
            )
    return tuple(out)


def _dimension_fixes(
    ctx: Context, produced: Product, expected: Product, sides: Sides
) -> tuple[Fix, ...]:
    fixes: list[Fix] = []
    if produced.continuous and expected.continuous:
        for target, other in ((expected, produced), (produced, expected)):
            decl = _single_sized_decl(ctx, target)
            body = decl.body if decl is not None else None
            if isinstance(body, ast.SizedObject) and body.size_span is not None:
                fixes.append(
                    Fix(
                        f"Change {target.label} to {body.constructor.text} {other.dim}",
                        (TextEdit(body.size_span, str(other.dim)),),
                    )
                )
        if sides.projection_at is not None:
            fixes.append(_projection_fix(ctx, produced, expected, sides.projection_at))
    return tuple(fixes)


def _single_sized_decl(ctx: Context, p: Product) -> ast.ObjectDecl | None:
    if len(p.factors) != 1:
        return None
    decl = ctx.object_decls.get(p.factors[0].name)
    if decl is None or not isinstance(decl.body, ast.SizedObject):
        return None
    return decl


def _projection_fix(ctx: Context, produced: Product, expected: Product, use_at: int) -> Fix:
    """A new linear Deterministic morphism produced -> expected, and its use."""
    base = "project_to_" + "_".join(n.lower() for n in expected.names)
    name, i = base, 2
    while name in ctx.top:
        name, i = f"{base}_{i}", i + 1
    decl = (
        f"morphism {name} : {produced.label} -> {expected.label} "
        "[role=kernel, param_source=linear] ~ Deterministic"
    )
    anchor = _declaration_anchor(ctx)
    insert = ctx.lines.span(anchor, anchor)
    use = ctx.lines.span(use_at, use_at)
    prefix = "\n" if anchor > 0 and ctx.text[anchor - 1 : anchor] != "\n" else ""
    return Fix(
        f"Insert a projection morphism {name} : {produced.label} -> {expected.label}",
        (TextEdit(insert, f"{prefix}{decl}\n"), TextEdit(use, f" >> {name}")),
    )


def _declaration_anchor(ctx: Context) -> int:
    """Where a new morphism declaration goes: after the last object or morphism."""
    ctx.frame.namespace = True  # it moves when a declaration comes or goes (incremental.py)
    anchor = 0
    for d in ctx.module.decls:
        if isinstance(d, ast.ObjectDecl | ast.MorphismDecl):
            anchor = ctx.real(d, d.span).end
    if anchor == 0:
        return 0
    nl = ctx.text.find("\n", anchor)
    return len(ctx.text) if nl < 0 else nl + 1
