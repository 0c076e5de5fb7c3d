"""`f.change_base(phi)` and the transformations it takes (`softmax(B) >>> expectation`).

quivers 0.25.2 (`dsl/compiler/expressions.py`, `_compile_trans_expr` and
`_apply_trans`; `core/morphisms.py`, `Morphism.change_base`) reads the argument as a
transformation: a singleton named bare (`expectation`), a constructor called with an
object or a morphism (`softmax(B)`, `bayes_invert(pi)`), a `define` bound to one, or
`t1 >>> t2`, whose steps run in order. It refuses a constructor named without its
argument, a name that is none of these, a seam where one step's target rule is not the
next one's source (">>>: target of step i ... does not match"), and a first step whose
source is not the morphism's rule; an axis that is no factor of the morphism fails when
its tensor is read, which qvr reports here. The result is a relation of the last step's
target rule: the same sides (Bayes' inversion swaps them), its tensor the steps applied
to the morphism's (`runtime/relations.py`, `Transformed`).

The morphism's rule is the file's declared one; without a declaration qvr's latents are
`markov` kernels (quivers' undeclared rule is product_fuzzy), so `expectation` and
`bayes_invert` start from them and `softmax` needs `composition product_fuzzy`. A
contraction call's rule is its own, and a change of base's is its last step's target.

`resolve` is pure: the checker reports its refusal, and the lowering reads its steps, so
both see one answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from qvr_core.builtins.algebras import UNDECLARED
from qvr_core.builtins.transformations import CHAIN, CHANGE_BASE, TRANSFORMATIONS
from qvr_core.check.context import SymbolKey
from qvr_core.check.module import CheckedModule, ModuleAlgebra, TransformationStep
from qvr_core.check.types import Arrow, Product
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Rule
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.passes import Env

Steps = tuple[TransformationStep, ...]


@dataclass(frozen=True)
class Refusal:
    """Why an expression is no transformation quivers applies, and where."""

    rule: Rule
    message: str
    span: Span


@dataclass(frozen=True)
class Names:
    """What resolving needs to know of the file's names: the steps of a let bound to a
    transformation (None: a let bound to something else, or no let), and which names are
    declared objects, morphisms and top-level names (a declaration hides a builtin)."""

    let_steps: Callable[[str], Steps | None]
    is_let: Callable[[str], bool]
    is_object: Callable[[str], bool]
    is_morphism: Callable[[str], bool]
    is_declared: Callable[[str], bool]


def is_transformation(expr: ast.Expr, names: Names) -> bool:
    """Whether a let's expression denotes a transformation (so the let binds one)."""
    match expr:
        case ast.Compose(op=op):
            return op == CHAIN
        case ast.Call(callee=callee):
            return callee.text in TRANSFORMATIONS and not names.is_declared(callee.text)
        case ast.NameRef(name=name):
            n = name.text
            if names.is_let(n):
                return names.let_steps(n) is not None
            return n in TRANSFORMATIONS and not names.is_declared(n)
        case _:
            return False


def resolve(expr: ast.Arg, names: Names) -> Steps | Refusal:
    """The steps `expr` names, in order, or why quivers refuses it."""
    match expr:
        case ast.Compose(op=op, left=left, right=right) if op == CHAIN:
            first, then = resolve(left, names), resolve(right, names)
            if isinstance(first, Refusal):
                return first
            if isinstance(then, Refusal):
                return then
            ends, starts = _rule(first[-1], "target"), _rule(then[0], "source")
            if ends != starts:
                return Refusal(
                    rules.COMPOSITION_RULE,
                    f"{CHAIN}: {first[-1].name} gives {ends} relations, and {then[0].name} "
                    f"takes {starts} ones",
                    expr.span,
                )
            return first + then
        case ast.NameRef(name=name):
            return _bare(name, names)
        case ast.Call(callee=callee, args=args, kwargs=kwargs):
            return _constructed(expr, callee, args, kwargs, names)
        case _:
            return Refusal(
                rules.WRONG_KIND,
                "does not denote a transformation: name one "
                f"({', '.join(TRANSFORMATIONS)}), a define bound to one, or chain them "
                f"with {CHAIN}",
                expr.span,
            )


def _bare(name: ast.Name, names: Names) -> Steps | Refusal:
    n = name.text
    if names.is_let(n):
        steps = names.let_steps(n)
        if steps is None:
            return Refusal(rules.WRONG_KIND, f"{n} is no transformation", name.span)
        return steps
    found = TRANSFORMATIONS.get(n)
    if names.is_declared(n):
        return Refusal(rules.WRONG_KIND, f"{n} is no transformation", name.span)
    if found is None:
        return Refusal(
            rules.UNDEFINED_NAME,
            f"undefined transformation '{n}': the builtins are {', '.join(TRANSFORMATIONS)}",
            name.span,
        )
    if found.constructor:
        return Refusal(
            rules.WRONG_KIND,
            f"{n} is a transformation constructor and needs its {found.takes}: `{n}(B)`",
            name.span,
        )
    return (TransformationStep(n),)


def _constructed(
    expr: ast.Call,
    callee: ast.Name,
    args: tuple[ast.Arg, ...],
    kwargs: tuple[ast.KeywordArg, ...],
    names: Names,
) -> Steps | Refusal:
    n = callee.text
    found = TRANSFORMATIONS.get(n)
    if found is None or names.is_declared(n):
        return Refusal(
            rules.UNDEFINED_NAME,
            f"undefined transformation constructor '{n}': the builtins are "
            + ", ".join(t.name for t in TRANSFORMATIONS.values() if t.constructor),
            callee.span,
        )
    if not found.constructor:
        return Refusal(
            rules.WRONG_KIND, f"{n} is a transformation named bare, with no arguments", expr.span
        )
    wanted = "an object" if found.takes == "axis" else "a morphism"
    if len(args) != 1 or kwargs or not isinstance(args[0], ast.NameRef):
        return Refusal(
            rules.ARGUMENT_NOT_A_NAME, f"{n} takes one argument, {wanted}: `{n}(B)`", expr.span
        )
    arg = args[0].name
    known = names.is_object if found.takes == "axis" else names.is_morphism
    if not known(arg.text):
        return Refusal(
            rules.UNDEFINED_NAME,
            f"{n} takes {wanted}, and '{arg.text}' is none",
            arg.span,
        )
    return (TransformationStep(n, arg.text),)


def _rule(step: TransformationStep, end: str) -> str:
    t = TRANSFORMATIONS[step.name]
    return t.source if end == "source" else t.target


def file_rule(declared: ModuleAlgebra | None) -> str:
    """The rule a file's latents are relations of: the declared one, else qvr's markov."""
    if declared is None:
        return UNDECLARED
    return declared.rule or declared.name


def axis_index(inner: Arrow, obj: str) -> int | None:
    """The tensor axis of the object `obj` (domain factors first, then the codomain's;
    the first that is it, as quivers' `_axis_index`), None when it is no factor."""
    sides = [s for s in (inner.dom, inner.cod) if isinstance(s, Product)]
    factors = [f for side in sides for f in side.factors]
    return next((i for i, f in enumerate(factors) if f.name == obj), None)


def transformed(inner: Arrow, steps: Steps) -> Arrow:
    """The type of the result: Bayes' inversion swaps the sides, the others keep them."""
    t = inner
    for step in steps:
        if TRANSFORMATIONS[step.name].takes == "prior":
            t = Arrow(t.cod, t.dom)
    return t


def names_of(env: Env) -> Names:
    """`Names` for the file being checked (a let's steps: typed on first use)."""
    ctx = env.ctx

    def is_let(n: str) -> bool:
        return isinstance(ctx.top.get(n), ast.LetDecl)

    def is_morphism(n: str) -> bool:
        decl = ctx.top.get(n)
        return isinstance(decl, ast.MorphismDecl) or (is_let(n) and env.transformation(n) is None)

    return Names(
        let_steps=env.transformation,
        is_let=is_let,
        is_object=lambda n: n in ctx.object_decls,
        is_morphism=is_morphism,
        is_declared=lambda n: n in ctx.top or n in ctx.object_decls,
    )


def checked_names(checked: CheckedModule) -> Names:
    """`Names` for a checked file: the lowering re-reads a change of base's steps."""

    def let_steps(n: str) -> Steps | None:
        info = checked.lets.get(n)
        return info.transformation if info is not None else None

    return Names(
        let_steps=let_steps,
        is_let=lambda n: n in checked.lets,
        is_object=lambda n: n in checked.objects,
        is_morphism=lambda n: (
            n in checked.morphisms or (n in checked.lets and let_steps(n) is None)
        ),
        is_declared=lambda n: (
            n in checked.objects
            or n in checked.morphisms
            or n in checked.lets
            or n in checked.programs
        ),
    )


def check_transformation_let(env: Env, expr: ast.Expr) -> Steps | None:
    """The steps a let bound to a transformation names; None after an error (reported)."""
    found = resolve(expr, names_of(env))
    _refer(env, expr)
    if isinstance(found, Refusal):
        env.ctx.report(found.rule, found.message, found.span)
        return None
    return found


def check_change_base(env: Env, expr: ast.Method, inner: Arrow | None) -> Arrow | None:
    """Type `f.change_base(phi)` (`inner`: f's type, None after an error)."""
    ctx = env.ctx
    args = expr.args or ()
    if len(args) != 1:
        ctx.report(
            rules.ARGUMENT_NOT_A_NAME,
            f"{CHANGE_BASE} takes one transformation: "
            f"{ctx.source(expr.receiver.span)}.{CHANGE_BASE}(expectation)",
            expr.method.span,
        )
        return None
    phi = args[0]
    found = resolve(phi, names_of(env))
    _refer(env, phi)
    if isinstance(found, Refusal):
        ctx.report(found.rule, found.message, found.span)
        return None
    if inner is None:
        return None
    receiver = ctx.source(expr.receiver.span)
    if not all(isinstance(s, Product) and s.discrete for s in (inner.dom, inner.cod)):
        ctx.report(
            rules.ROLE_TYPE_MISMATCH,
            f"{CHANGE_BASE} moves a relation between finite sets, not {receiver} : {inner.label}",
            expr.receiver.span,
        )
        return None
    has = receiver_rule(env, expr.receiver)
    first = TRANSFORMATIONS[found[0].name]
    if first.source != has:
        why = (
            " (the file declares no composition rule, so its latents are qvr's markov "
            "kernels; quivers' undeclared rule is product_fuzzy)"
            if env.algebra() is None and has == UNDECLARED
            else ""
        )
        ctx.report(
            rules.COMPOSITION_RULE,
            f"{CHANGE_BASE}: {first.name} takes {first.source} relations, and {receiver}'s "
            f"entries are {has} ones{why}",
            phi.span,
        )
        return None
    problem = _applies(env, inner, found)
    if problem is not None:
        ctx.report(rules.ROLE_TYPE_MISMATCH, f"{CHANGE_BASE}: {problem}", phi.span)
        return None
    return transformed(inner, found)


def _applies(env: Env, inner: Arrow, steps: Steps) -> str | None:
    """Why a step cannot act on the relation it gets (an axis that is no factor of it, an
    inversion of more than a matrix or under a prior of another size), else None."""
    t = inner
    for step in steps:
        takes = TRANSFORMATIONS[step.name].takes
        if takes == "axis" and axis_index(t, step.argument) is None:
            return f"{step.argument} is no factor of {t.label}, so {step.name} has no axis"
        if takes == "prior":
            dom, cod = t.dom, t.cod
            assert isinstance(dom, Product) and isinstance(cod, Product)
            if len(dom.factors) != 1 or len(cod.factors) != 1:
                return f"{step.name} inverts a kernel from one finite set to one, not {t.label}"
            prior = env.arrow_of(step.argument)
            size = dom.factors[0].size
            entries = _entries(prior) if prior is not None else None
            if prior is not None and entries is not None and entries != size:
                return (
                    f"the prior {step.argument} : {prior.label} has {entries} entries, "
                    f"and {step.name} needs one per value of {dom.label} ({size})"
                )
            t = Arrow(cod, dom)
    return None


def _entries(t: Arrow) -> int | None:
    """How many entries a relation's tensor has (None: a side is no product)."""
    sides = [s for s in (t.dom, t.cod) if isinstance(s, Product)]
    return sides[0].size * sides[1].size if len(sides) == 2 else None


def receiver_rule(env: Env, expr: ast.Expr, seen: frozenset[str] = frozenset()) -> str:
    """The rule the relation `expr` is valued in: a change of base's last target, a
    contraction call's own rule, a let's expression's, else the file's."""
    match expr:
        case ast.Method(args=(phi,)) if expr.method.text == CHANGE_BASE:
            found = resolve(phi, names_of(env))
            if not isinstance(found, Refusal):
                return TRANSFORMATIONS[found[-1].name].target
        case ast.Call(callee=callee):
            contraction = env.contraction(callee.text)
            if contraction is not None:
                return contraction.rule
        case ast.NameRef(name=name) if name.text not in seen:
            decl = env.ctx.top.get(name.text)
            if isinstance(decl, ast.LetDecl):
                return receiver_rule(env, decl.expr, seen | {name.text})
    return file_rule(env.algebra())


def _refer(env: Env, expr: ast.Arg) -> None:
    """Record each declared name the transformation uses (go to definition, hover)."""
    ctx = env.ctx
    stack: list[object] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Compose):
            stack += [node.left, node.right]
        elif isinstance(node, ast.Call):
            stack += list(node.args)
        elif isinstance(node, ast.NameRef):
            n = node.name.text
            if n in ctx.top or n in ctx.object_decls:
                ctx.ref(node.name.span, SymbolKey(n))
