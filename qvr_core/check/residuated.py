"""quivers' residuated objects: pattern aliases and `FreeResiduated` category universes.

quivers 0.25.2 (`dsl/compiler/declarations.py`, `_compile_type`) reads two kinds of
object declaration in the residuated stratum of categorial grammar:

- `object Sentence : S \\ NP`: a right-hand side with `/` or `\\` (or a product or
  coproduct with such a part, or a name already standing for one) is a *pattern
  alias*, recorded for substitution where a schema's pattern names it. It has no
  values: its names are pattern atoms, never resolved (quivers reports nothing for
  an undeclared `S`), and naming it as a morphism's type is an error there
  ("undefined object or space"). qvr declares the alias, shows it in hover, and
  refuses it as a type with a message that says why.
- `object Cat : FreeResiduated(Atoms, depth=d, ops=[...])`: the finite set of every
  category built from the atoms of the enumerated object `Atoms` by `d` rounds of the
  connectives (`stochastic/categories.py`, `CategorySystem.from_generators`): each round
  applies every connective to the categories of the round before, in order, and keeps
  what is new. `slash` adds A/B and A\\B for every pair, `product` A⊗B, `unit` the unit
  I (once), `diamond` ◇A and `box` □A. The defaults are `depth=1`, `ops=[slash]`.
  qvr types it as a `FinSet` of that many values and names them in hover; a universe
  larger than `MAX_CATEGORIES` is refused where it is declared (its size is counted
  before anything is enumerated).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from qvr_core.builtins.objects import RESIDUATED_CONNECTIVES
from qvr_core.check.context import SymbolKey
from qvr_core.check.types import ObjectType
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.units import format_count

if TYPE_CHECKING:
    from qvr_core.check.context import Context

FREE_RESIDUATED = "FreeResiduated"
#: The most categories a `FreeResiduated` universe may have: a parser's chart holds a
#: weight per span and category, so a larger one would not fit in memory anyway.
MAX_CATEGORIES = 100_000
#: How many of a universe's categories hover lists.
SHOWN = 12
_SLASHES = ("/", "\\")


def is_pattern(
    ctx: Context, body: ast.ObjectExpr | None, seen: frozenset[str] = frozenset()
) -> bool:
    """Whether an object's right-hand side is in the residuated stratum (a pattern alias)."""
    if isinstance(body, ast.ObjBinary):
        return body.op in _SLASHES or any(
            is_pattern(ctx, side, seen) for side in (body.left, body.right)
        )
    if isinstance(body, ast.TypeRef):
        return any(pattern_name(ctx, f.text, seen) for f in body.factors)
    return False


def pattern_name(ctx: Context, name: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether `name` is a declared pattern alias."""
    decl = ctx.object_decls.get(name)
    if decl is None or name in seen:
        return False
    return is_pattern(ctx, decl.body, seen | {name})


def pattern_alias(ctx: Context, decl: ast.ObjectDecl) -> None:
    """`object Sentence : S \\ NP`: declared, shown in hover, its declared names linked."""
    ctx.record_type(
        decl.name.span,
        ResiduatedPattern(decl.name.text, ctx.source(decl.body.span)),
        "a residuated pattern: quivers substitutes it where a schema's pattern names it",
    )
    for name in ast_names(decl.body):
        if name.text in ctx.object_decls or name.text in ctx.top:
            ctx.ref(name.span, SymbolKey(name.text))


def refuse_as_type(ctx: Context, name: ast.Name) -> None:
    """A pattern alias where a set of values is needed (a morphism's type, a plate)."""
    decl = ctx.object_decls[name.text]
    ctx.ref(name.span, SymbolKey(name.text))
    ctx.report(
        rules.WRONG_KIND,
        f"{name.text} is a residuated pattern ({ctx.source(decl.body.span)}), not a set of "
        "values: it can stand only inside a schema's pattern, as in quivers",
        name.span,
    )


class ResiduatedPattern:
    """The hover type of a pattern alias: its name and its pattern as written."""

    def __init__(self, name: str, pattern: str) -> None:
        self.name = name
        self.pattern = pattern

    @property
    def label(self) -> str:
        return self.pattern


def free_residuated(ctx: Context, decl: ast.ObjectDecl, body: ast.ObjApply) -> None:
    """`object Cat : FreeResiduated(Atoms, depth=1, ops=[slash])`: a FinSet of categories."""
    name = decl.name.text
    generators = [a for a in body.args if not isinstance(a, ast.Option)]
    options = [a for a in body.args if isinstance(a, ast.Option)]
    if len(generators) != 1 or type(generators[0]) is not ast.TypeRef:
        ctx.report(
            rules.ARGUMENT_COUNT,
            f"{FREE_RESIDUATED} takes one enumerated object of atoms: "
            f"{FREE_RESIDUATED}(Atoms, depth=1, ops=[slash])",
            body.span,
        )
        return
    atoms_ref = generators[0]
    if len(atoms_ref.factors) != 1:
        ctx.report(
            rules.WRONG_KIND,
            f"{FREE_RESIDUATED}'s atoms are one enumerated object, not a product",
            atoms_ref.span,
        )
        return
    atoms_name = atoms_ref.factors[0]
    atoms = ctx.objects.get(atoms_name.text)
    if atoms is None:
        if atoms_name.text in ctx.object_decls:
            ctx.ref(atoms_name.span, SymbolKey(atoms_name.text))
        else:
            ctx.undefined(atoms_name, "object", list(ctx.object_decls))
        return
    ctx.ref(atoms_name.span, SymbolKey(atoms_name.text))
    if not atoms.elements:
        ctx.report(
            rules.WRONG_KIND,
            f"{FREE_RESIDUATED}'s atoms must be an enumerated object ({{N, NP, S}}), but "
            f"{atoms.name} is {atoms.describe()}",
            atoms_name.span,
        )
        return
    depth, ops = _options(ctx, name, options)
    if depth is None or ops is None:
        return
    size = closure_size(len(atoms.elements), depth, ops)
    if size is None:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"{FREE_RESIDUATED} {name} has more than {format_count(MAX_CATEGORIES)} "
            f"categories at depth {depth}: lower the depth or use fewer connectives",
            body.span,
        )
        return
    written = f"{FREE_RESIDUATED}({atoms.name}, depth={depth}, ops=[{', '.join(ops)}])"
    found = ObjectType(name, "finset", size, closure=written)
    ctx.objects[name] = found
    first = categories(atoms.elements, depth, ops, SHOWN)
    more = f", ... ({format_count(size)} in all)" if size > len(first) else ""
    ctx.record_type(decl.name.span, found, f"its categories: {', '.join(first)}{more}")


def _options(
    ctx: Context, name: str, options: list[ast.Option]
) -> tuple[int | None, tuple[str, ...] | None]:
    depth: int | None = 1
    ops: tuple[str, ...] | None = ("slash",)
    for o in options:
        key, v = o.key.text, o.value
        if key == "depth":
            if isinstance(v, ast.Literal) and v.kind == "int" and int(v.value) >= 0:
                depth = int(v.value)
            else:
                ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"{FREE_RESIDUATED} {name}: depth must be a whole number >= 0",
                    o.span,
                )
                depth = None
        elif key == "ops":
            items = v.items if isinstance(v, ast.ValueList) else (v,)
            words = [str(i.value) for i in items if isinstance(i, ast.Literal)]
            bad = [w for w in words if w not in RESIDUATED_CONNECTIVES]
            if bad or not words or len(words) != len(items):
                shown = bad[0] if bad else ctx.source(o.span)
                ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"{FREE_RESIDUATED} {name}: ops takes a list of at least one of "
                    f"{', '.join(RESIDUATED_CONNECTIVES)}, not {shown}",
                    o.span,
                )
                ops = None
            else:
                ops = tuple(words)
        else:
            ctx.report(
                rules.UNKNOWN_OPTION,
                f"unknown option '{key}' of {FREE_RESIDUATED} (its options are depth and ops)",
                o.key.span,
            )
    return depth, ops


def closure_size(atoms: int, depth: int, ops: Iterable[str]) -> int | None:
    """How many categories `depth` rounds of `ops` make from `atoms` atoms, counted
    without enumerating them; None past `MAX_CATEGORIES`.

    A round applies each connective to the categories of the round before and keeps
    what is new. A binary connective's A op B is new exactly when A or B is (it was made
    in an earlier round when both were there), a modality's ◇A when A is, and the unit
    only in the first round; categories of different connectives never coincide."""
    ops = tuple(ops)
    binary = 2 * ops.count("slash") + ops.count("product")
    modal = ops.count("diamond") + ops.count("box")
    before, now = 0, atoms
    for round_ in range(depth):
        new = binary * (now * now - before * before) + modal * (now - before)
        if round_ == 0 and "unit" in ops:
            new += 1
        before, now = now, now + new
        if now > MAX_CATEGORIES:
            return None
    return now


#: A category as a tuple: ("atom", name), ("slash", result, argument, direction),
#: ("product", left, right), ("unit",) or ("modal", mark, inner).
Category = tuple[object, ...]


def categories(atoms: tuple[str, ...], depth: int, ops: tuple[str, ...], limit: int) -> list[str]:
    """The first `limit` categories in quivers' order (its `CategorySystem` indices),
    written as quivers writes them (`N/NP`, `(S\\NP)/NP`, `N⊗S`, `◇N`, `I`)."""
    return [category_text(c) for c in inventory(atoms, depth, ops, limit)]


def inventory(
    atoms: Sequence[str], depth: int, ops: Sequence[str], limit: int | None = None
) -> list[Category]:
    """The categories `depth` rounds of `ops` make from `atoms`, in quivers' order (at most
    `limit` of them): each round applies each connective, in order, to the categories of
    the round before and keeps what is new."""
    found: list[Category] = [("atom", a) for a in atoms]
    seen = set(found)
    for _ in range(depth):
        current = list(found)
        for op in ops:
            for made in _made(op, current):
                if made not in seen:
                    seen.add(made)
                    found.append(made)
                    if limit is not None and len(found) >= limit:
                        return found[:limit]
    return found if limit is None else found[:limit]


def _made(op: str, current: list[Category]) -> Iterable[Category]:
    if op == "slash":
        for result in current:
            for arg in current:
                yield ("slash", result, arg, "/")
                yield ("slash", result, arg, "\\")
    elif op == "product":
        for left in current:
            for right in current:
                yield ("product", left, right)
    elif op == "unit":
        yield ("unit",)
    else:
        mark = "◇" if op == "diamond" else "□"
        for inner in current:
            yield ("modal", mark, inner)


def category_text(c: Category) -> str:
    """quivers' `__str__` of each kind: a slash wraps a slash part in parentheses, a
    product and a modality wrap a slash or a product part."""
    kind = c[0]
    if kind == "atom":
        return str(c[1])
    if kind == "unit":
        return "I"
    if kind == "slash":
        _, result, arg, direction = c
        return f"{_part(result, ('slash',))}{direction}{_part(arg, ('slash',))}"
    if kind == "product":
        _, left, right = c
        return f"{_part(left, ('slash', 'product'))}⊗{_part(right, ('slash', 'product'))}"
    _, mark, inner = c
    return f"{mark}{_part(inner, ('slash', 'product'))}"


def _part(c: object, wrapped: tuple[str, ...]) -> str:
    assert isinstance(c, tuple)
    text = category_text(c)
    return f"({text})" if c[0] in wrapped else text


def universe_atoms(ctx: Context) -> list[tuple[str, tuple[str, ...]]]:
    """Each checked `FreeResiduated` universe of the file with the atoms it closes, in
    the file's order (a chart parser with no atoms of its own reads them)."""
    found = []
    for name, decl in ctx.object_decls.items():
        body = decl.body
        if not (
            isinstance(body, ast.ObjApply)
            and body.func.text == FREE_RESIDUATED
            and name in ctx.objects
        ):
            continue
        atoms_ref = next(a for a in body.args if not isinstance(a, ast.Option))
        assert isinstance(atoms_ref, ast.TypeRef)
        found.append((name, ctx.objects[atoms_ref.factors[0].text].elements))
    return found


def ast_names(node: object) -> list[ast.Name]:
    """The names an object expression mentions."""
    if isinstance(node, ast.TypeRef):
        return list(node.factors)
    if isinstance(node, ast.ObjBinary):
        return ast_names(node.left) + ast_names(node.right)
    return []
