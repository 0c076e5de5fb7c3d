"""quivers' built-in rule schemas of categorial grammar, as patterns over categories.

A chart parser's `rules=[...]` may name these besides the file's own `rule` and `schema`
declarations (quivers 0.25.2, `stochastic/schema.py`, `SCHEMA_REGISTRY`); no rule, schema
or bundle may take one of their names. Each is written here as the pattern rules it
instantiates over a category inventory, in quivers' order, so the checker instantiates
a built-in exactly as it instantiates a user's `schema fwd_app (X, Y : Cat) : (X / Y) * Y
-> X`: every premise category that matches binds the variables, and the conclusion, if
it is in the inventory, is a rule of the parser.

A pattern is a tuple: `("var", X)`, `("atom", S)`, `("slash", result, argument, "/" or
"\\\\")` (`X/Y` has result X and argument Y, and so does `X\\\\Y`), `("product", (A, B,
...))` (a left-nested product), `("unit",)` or `("modal", mark, inner)`. A conclusion
variable that no premise binds ranges over the whole inventory in its order only where a
rule says so (`ranges`): type raising, whose raised category is found, not matched.
"""

from __future__ import annotations

from dataclasses import dataclass

Pattern = tuple[object, ...]


@dataclass(frozen=True)
class PatternRule:
    """One or two premise patterns and a conclusion pattern."""

    premises: tuple[Pattern, ...]
    conclusion: Pattern
    #: the conclusion's variables that no premise binds range over the inventory
    ranges: bool = False


@dataclass(frozen=True)
class Schema:
    """A built-in schema: its name as `rules=[...]` writes it, its rules, and its doc."""

    name: str
    rules: tuple[PatternRule, ...]
    doc: str


def _v(name: str) -> Pattern:
    return ("var", name)


def _fwd(result: Pattern, argument: Pattern) -> Pattern:
    return ("slash", result, argument, "/")


def _bwd(result: Pattern, argument: Pattern) -> Pattern:
    return ("slash", result, argument, "\\")


def _diamond(inner: Pattern) -> Pattern:
    return ("modal", "◇", inner)


_X, _Y, _Z = _v("X"), _v("Y"), _v("Z")
_UNIT: Pattern = ("unit",)


def _rule(*patterns: Pattern, ranges: bool = False) -> PatternRule:
    return PatternRule(patterns[:-1], patterns[-1], ranges)


_SCHEMAS = (
    Schema(
        "evaluation",
        (_rule(_fwd(_X, _Y), _Y, _X), _rule(_Y, _bwd(_X, _Y), _X)),
        "forward and backward application: X/Y, Y => X and Y, X\\Y => X",
    ),
    Schema(
        "harmonic_composition",
        (
            _rule(_fwd(_X, _Y), _fwd(_Y, _Z), _fwd(_X, _Z)),
            _rule(_bwd(_Y, _Z), _bwd(_X, _Y), _bwd(_X, _Z)),
        ),
        "forward and backward composition: X/Y, Y/Z => X/Z and Y\\Z, X\\Y => X\\Z",
    ),
    Schema(
        "crossed_composition",
        (
            _rule(_fwd(_X, _Y), _bwd(_Y, _Z), _bwd(_X, _Z)),
            _rule(_fwd(_Y, _Z), _bwd(_X, _Y), _fwd(_X, _Z)),
        ),
        "crossed composition: X/Y, Y\\Z => X\\Z and Y/Z, X\\Y => X/Z",
    ),
    Schema(
        "generalized_composition",
        (
            _rule(_fwd(_X, _Y), _fwd(_Y, _Z), _fwd(_X, _Z)),
            _rule(_fwd(_X, _Y), _bwd(_Y, _Z), _bwd(_X, _Z)),
        ),
        "composition into either slash of the right category: X/Y, Y/Z => X/Z and "
        "X/Y, Y\\Z => X\\Z",
    ),
    Schema(
        "adjunction_units",
        (
            _rule(_X, _fwd(_Z, _bwd(_Z, _X)), ranges=True),
            _rule(_X, _bwd(_Z, _fwd(_Z, _X)), ranges=True),
        ),
        "type raising: X => Z/(Z\\X) and X => Z\\(Z/X), for every Z of the inventory",
    ),
    Schema(
        "tensor_introduction",
        (_rule(_X, _Y, ("product", (_X, _Y))),),
        "product formation: X, Y => X⊗Y",
    ),
    Schema(
        "tensor_projection",
        (_rule(("product", (_X, _Y)), _X), _rule(("product", (_X, _Y)), _Y)),
        "the projections out of a product: X⊗Y => X and X⊗Y => Y",
    ),
    Schema(
        "commutative_evaluation",
        (_rule(_Y, _fwd(_X, _Y), _X), _rule(_bwd(_X, _Y), _Y, _X)),
        "application with the argument on either side: Y, X/Y => X and X\\Y, Y => X",
    ),
    Schema(
        "unit_introduction",
        (_rule(_UNIT, _X, _X), _rule(_X, _UNIT, _X)),
        "the unitors: I, X => X and X, I => X",
    ),
    Schema(
        "unit_elimination",
        (_rule(_X, _UNIT),),
        "any category to the unit: X => I",
    ),
    Schema(
        "modal_introduction",
        (_rule(_X, _diamond(_X)),),
        "modal injection: X => ◇X",
    ),
    Schema(
        "modal_elimination",
        (_rule(_diamond(_X), _X),),
        "modal projection: ◇X => X",
    ),
    Schema(
        "modal_application",
        (
            _rule(_diamond(_fwd(_X, _Y)), _diamond(_Y), _diamond(_X)),
            _rule(_diamond(_Y), _diamond(_bwd(_X, _Y)), _diamond(_X)),
        ),
        "application under the modality: ◇(X/Y), ◇Y => ◇X and ◇Y, ◇(X\\Y) => ◇X",
    ),
)

#: The built-in schemas by name, in quivers' order.
SCHEMAS: dict[str, Schema] = {s.name: s for s in _SCHEMAS}

#: quivers' chart parser: `parser(rules=[...], terminal=Token, start=S, depth=1)`.
PARSER = "parser"
#: Its keywords (quivers' grammar parses no others), with what each gives.
PARSER_KEYWORDS: dict[str, str] = {
    "rules": "the rules, schemas (the file's or built in) and bundles the parser applies",
    "terminal": "the finite set of tokens; the learned lexicon has a row per token",
    "start": "the category a whole sentence is parsed as (default S)",
    "depth": "rounds of the connectives that close the atoms into categories (default 1)",
    "categories": "the atoms (default: the `category` declarations, else the atoms of the "
    "file's one FreeResiduated universe)",
    "constructors": "the connectives of the closure: slash, product, unit, diamond, box "
    "(default [slash])",
}
#: The signature of a call, as signature help and hover show it.
PARSER_SIGNATURE = (
    "parser(rules=[...], terminal=T, start=S, depth=1, categories=[...], "
    "constructors=[slash]) : [T] -> Real"
)
#: What a call makes, as hover and completion document it.
PARSER_DOC = (
    "A differentiable CKY chart parser (quivers' `ChartParser`): a learned lexicon gives each "
    "token a distribution over the categories (the atoms closed under the connectives for "
    "`depth` rounds), the rules combine adjacent spans, and a sentence of token indices "
    "scores the log weight of the start category over the whole of it."
)
