"""A chart parser's grammar: its category inventory and the rules its schemas make there.

quivers 0.25.2 builds `parser(rules=[...], terminal=T, start=S, depth=d)` over schema
rules (`dsl/compiler/expressions.py`, `_compile_parser_schemas`) as follows, and this
module computes the same, without torch:

- the inventory: the atoms closed under the connectives (`constructors=[...]`, slash
  alone by default) for `depth` rounds (`CategorySystem.from_atoms_and_slash_depth` /
  `from_generators`), in quivers' order, which is `residuated.inventory`'s;
- each schema, user-declared (`PatternBinarySchema`, `PatternUnarySchema`) or built in
  (`builtins.schemas`), tried on every category (unary) or ordered pair of categories
  (binary) in inventory order: the premises bind the pattern variables, the conclusion
  is instantiated, and where it is in the inventory the rule (conclusion, premises) is
  the parser's. The schemas' rules are then joined in the order written with each rule
  kept once (`RuleSystem.__add__`).

Patterns are matched on what they can match only (a slash pattern against the slash
categories of its direction, a variable bound by the left premise against its one
category), so a grammar costs about as many tests as it has rules, not the square of its
inventory; a grammar that would still take more than `MAX_TESTS` tests is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from qvr_core.builtins.schemas import PARSER, Pattern, PatternRule
from qvr_core.check.residuated import Category, category_text
from qvr_core.syntax import ast

#: quivers' unary rounds per chart cell (`UnarySpanDeduction(iterations=3)`).
UNARY_ITERATIONS = 3
#: The most categories a parser's inventory may have: its chart holds a weight per
#: sentence, span and category.
MAX_PARSER_CATEGORIES = 10_000
#: The most premise tests a grammar's rules may take to instantiate.
MAX_TESTS = 2_000_000


@dataclass(frozen=True)
class ChartGrammar:
    """What a checked `parser(...)` computes: a CKY chart over `categories`.

    `binary` rules are (conclusion, left, right) and `unary` ones (conclusion, premise),
    indices into `categories`; `terminals` is the size of the terminal object, whose
    values index the learned lexicon's rows; `start` the goal category's index."""

    name: str
    categories: tuple[str, ...]
    terminal: str
    terminals: int
    start: int
    binary: tuple[tuple[int, int, int], ...]
    unary: tuple[tuple[int, int], ...]
    iterations: int = UNARY_ITERATIONS

    @property
    def parameters(self) -> int:
        """How many numbers the parser learns: its lexicon's logits and its rule weights."""
        return self.terminals * len(self.categories) + len(self.binary) + len(self.unary)

    def summary(self) -> str:
        """One line for hover: the inventory and the rules."""
        shown = ", ".join(self.categories[:8])
        more = f", ... ({len(self.categories)} in all)" if len(self.categories) > 8 else ""
        return (
            f"a CKY chart parser over {self.terminal}: categories {shown}{more}; "
            f"{len(self.binary)} binary and {len(self.unary)} unary rules; it scores a "
            f"sentence by the log weight of {self.categories[self.start]} over the whole of it"
        )


class TooManyTests(Exception):
    """The grammar's rules would take more than `MAX_TESTS` tests to instantiate."""


class _Inventory:
    """The categories with their indices, and the lists a pattern's shape selects."""

    def __init__(self, categories: Sequence[Category]) -> None:
        self.cats = list(categories)
        self.index = {c: i for i, c in enumerate(self.cats)}
        self.by_shape: dict[tuple[object, ...], list[int]] = {}
        for i, c in enumerate(self.cats):
            self.by_shape.setdefault(_shape(c), []).append(i)
        self.tests = 0

    def candidates(self, pattern: Pattern, bound: dict[str, Category]) -> Iterable[int]:
        """The indices of the categories `pattern` may match, in inventory order."""
        if pattern[0] == "var":
            name = str(pattern[1])
            if name in bound:
                found = self.index.get(bound[name])
                return () if found is None else (found,)
            return range(len(self.cats))
        return self.by_shape.get(_shape(pattern), ())

    def count(self, n: int = 1) -> None:
        self.tests += n
        if self.tests > MAX_TESTS:
            raise TooManyTests


def _shape(c: tuple[object, ...]) -> tuple[object, ...]:
    """What a category or a non-variable pattern is at its root: an atom by its name, a
    slash by its direction, a product by its arity (a pattern's parts are flattened),
    a modality by its mark."""
    kind = c[0]
    if kind == "atom":
        return ("atom", c[1])
    if kind == "slash":
        return ("slash", c[3])
    if kind == "modal":
        return ("modal", c[1])
    return (kind,)


def rules_of(
    categories: Sequence[Category], schemas: Sequence[Sequence[PatternRule]]
) -> tuple[tuple[tuple[int, int, int], ...], tuple[tuple[int, int], ...]]:
    """The binary and unary rules `schemas` make over `categories`, each kept once, in
    quivers' order. Raises TooManyTests past `MAX_TESTS`."""
    inv = _Inventory(categories)
    binary: dict[tuple[int, int, int], None] = {}
    unary: dict[tuple[int, int], None] = {}
    for schema in schemas:
        for rule in schema:
            if len(rule.premises) == 2:
                binary.update(dict.fromkeys(_binary(inv, rule)))
            else:
                unary.update(dict.fromkeys(_unary(inv, rule)))
    return tuple(binary), tuple(unary)


def _binary(inv: _Inventory, rule: PatternRule) -> Iterator[tuple[int, int, int]]:
    left_p, right_p = rule.premises
    for i in inv.candidates(left_p, {}):
        inv.count()
        bound: dict[str, Category] = {}
        if not match(left_p, inv.cats[i], bound):
            continue
        for j in inv.candidates(right_p, bound):
            inv.count()
            both = dict(bound)
            if not match(right_p, inv.cats[j], both):
                continue
            made = instantiate(rule.conclusion, both)
            k = inv.index.get(made) if made is not None else None
            if k is not None:
                yield (k, i, j)


def _unary(inv: _Inventory, rule: PatternRule) -> Iterator[tuple[int, int]]:
    (premise,) = rule.premises
    free = sorted(variables(rule.conclusion) - variables(premise)) if rule.ranges else []
    for i in inv.candidates(premise, {}):
        inv.count()
        bound: dict[str, Category] = {}
        if not match(premise, inv.cats[i], bound):
            continue
        for extra in _assignments(inv, free):
            inv.count()
            made = instantiate(rule.conclusion, {**bound, **extra})
            k = inv.index.get(made) if made is not None else None
            if k is not None:
                yield (k, i)


def _assignments(inv: _Inventory, free: list[str]) -> Iterator[dict[str, Category]]:
    """Every binding of the `free` variables to categories, in inventory order."""
    if not free:
        yield {}
        return
    first, rest = free[0], free[1:]
    for c in inv.cats:
        for more in _assignments(inv, rest):
            yield {first: c, **more}


def variables(pattern: Pattern) -> set[str]:
    """The variables a pattern names."""
    kind = pattern[0]
    if kind == "var":
        return {str(pattern[1])}
    if kind == "slash":
        return variables(_p(pattern[1])) | variables(_p(pattern[2]))
    if kind == "product":
        return set().union(*(variables(_p(c)) for c in parts(pattern)))
    if kind == "modal":
        return variables(_p(pattern[2]))
    return set()


def match(pattern: Pattern, category: Category, bound: dict[str, Category]) -> bool:
    """Whether `category` matches `pattern`, extending `bound` (quivers' `_match_pattern`:
    a bound variable matches its category only; a product pattern of n parts matches a
    category's left spine of n products)."""
    kind = pattern[0]
    if kind == "var":
        name = str(pattern[1])
        if name in bound:
            return bound[name] == category
        bound[name] = category
        return True
    if kind == "atom":
        return category == pattern
    if kind == "unit":
        return category == ("unit",)
    if kind == "slash":
        return (
            category[0] == "slash"
            and category[3] == pattern[3]
            and match(_p(pattern[1]), _c(category[1]), bound)
            and match(_p(pattern[2]), _c(category[2]), bound)
        )
    if kind == "modal":
        return (
            category[0] == "modal"
            and category[1] == pattern[1]
            and match(_p(pattern[2]), _c(category[2]), bound)
        )
    if kind == "product":
        pieces = parts(pattern)
        spine = _spine(category, len(pieces))
        return spine is not None and all(
            match(p, c, bound) for p, c in zip(pieces, spine, strict=True)
        )
    return False  # an application (`M(X)`): quivers matches no category with it


def instantiate(pattern: Pattern, bound: dict[str, Category]) -> Category | None:
    """The category `pattern` stands for under `bound` (None: a variable is unbound, or
    the pattern is no category)."""
    kind = pattern[0]
    if kind == "var":
        return bound.get(str(pattern[1]))
    if kind in ("atom", "unit"):
        return pattern
    if kind == "slash":
        result = instantiate(_p(pattern[1]), bound)
        argument = instantiate(_p(pattern[2]), bound)
        if result is None or argument is None:
            return None
        return ("slash", result, argument, pattern[3])
    if kind == "modal":
        inner = instantiate(_p(pattern[2]), bound)
        return None if inner is None else ("modal", pattern[1], inner)
    if kind == "product":
        made = [instantiate(p, bound) for p in parts(pattern)]
        if any(m is None for m in made):
            return None
        out = made[0]
        for nxt in made[1:]:
            out = ("product", out, nxt)
        return out
    return None


def _spine(category: Category, n: int) -> list[Category] | None:
    """A product category's left spine as n parts (quivers unfolds it from the right)."""
    if category[0] != "product":
        return None
    spine = [_c(category[2])]
    cur = _c(category[1])
    while len(spine) < n - 1 and cur[0] == "product":
        spine.append(_c(cur[2]))
        cur = _c(cur[1])
    spine.append(cur)
    spine.reverse()
    return spine if len(spine) == n else None


def parts(pattern: Pattern) -> tuple[Pattern, ...]:
    """A product pattern's parts (flattened, left to right)."""
    found = pattern[1]
    assert isinstance(found, tuple)
    return found


def _p(x: object) -> Pattern:
    assert isinstance(x, tuple)
    return x


_c = _p


def texts(categories: Iterable[Category]) -> tuple[str, ...]:
    """The categories as quivers writes them."""
    return tuple(category_text(c) for c in categories)


def is_parser_call(top: Mapping[str, object], expr: ast.Expr) -> bool:
    """Whether a let's expression is quivers' `parser(...)`, not a call of a file's own
    `parser` (`top`: the module's declarations by name)."""
    return isinstance(expr, ast.Call) and expr.callee.text == PARSER and PARSER not in top
