"""`define g = parser(rules=[...], terminal=Token, start=S, depth=1)`: a chart parser.

quivers 0.25.2 (`dsl/compiler/expressions.py`, `ExprParser`) compiles such a call over
rule schemas into a differentiable CKY parser (`stochastic/parsers.py`, `ChartParser`):
a learned lexicon gives each terminal a distribution over the categories, the rules
combine adjacent spans, and a sentence scores the log weight of the start category over
the whole of it. The checker reads the call as quivers' compiler does and reports what
it refuses where it is written:

- `rules=[...]` names user `rule`s and `schema`s, quivers' built-in schemas
  (`builtins.schemas`) and `bundle`s of them (spliced in, recursively; a cycle is
  refused). Rules naming declared morphisms are quivers' other parser (`InsideAlgorithm`
  over a lexicon morphism), which qvr checks for names only (QVR011); a mix of the two
  kinds is refused.
- The atoms are `categories=[...]` if given, else the file's `category` declarations,
  else the atoms of its one `FreeResiduated` universe (two universes: say which).
  The inventory closes them under `constructors=[...]` (slash alone by default) for
  `depth` rounds (default 1): the parser's own depth, not the universe's.
- `terminal=` names a finite set, whose values are the tokens; `start=` names an atom
  (default S). quivers reads a number there as S, which qvr warns of (QVR802).

The let's type is `[Terminal] -> Real` (a sentence to its log weight); its record
(`chart_grammar.ChartGrammar`: the inventory and the rules instantiated) is what the
runtime builds the parser from (`runtime/chart_parser.py`). A parser is called from
Python or exported; it is no morphism of the file's expressions (quivers' is a
`DeductiveSystem`, no `Morphism`), so a use of it inside another expression is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from qvr_core.builtins.objects import BY_KIND, RESIDUATED_CONNECTIVES
from qvr_core.builtins.schemas import PARSER_KEYWORDS, SCHEMAS, Pattern, PatternRule
from qvr_core.check.chart_grammar import (
    MAX_PARSER_CATEGORIES,
    MAX_TESTS,
    ChartGrammar,
    TooManyTests,
    parts,
    rules_of,
    texts,
)
from qvr_core.check.grammar_rules import is_grammar
from qvr_core.check.module import LetInfo
from qvr_core.check.residuated import closure_size, inventory, universe_atoms
from qvr_core.check.types import Arrow, ObjectType, Product, Seq
from qvr_core.check.unchecked import note, refer
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.units import format_count

if TYPE_CHECKING:
    from qvr_core.check.context import Context

#: What a parser gives a sentence: its log weight, one real number.
REAL = BY_KIND["real"].name
SCORE = Product((ObjectType(REAL, "real", 1),), (REAL,))


def check_parser(ctx: Context, name: str, decl: ast.LetDecl) -> LetInfo:
    """Type `define name = parser(...)`; its grammar when it is a schema parser."""
    call = decl.expr
    assert isinstance(call, ast.Call)
    refer(ctx, call)
    for arg in call.args:
        ctx.report(
            rules.ARGUMENT_NOT_A_NAME,
            f"parser takes its arguments by keyword ({', '.join(PARSER_KEYWORDS)}), not "
            f"{ctx.source(arg.span)}",
            arg.span,
        )
    given = _keywords(ctx, call)
    if given is None or call.args:
        return LetInfo(name, decl, None)
    found = _rules(ctx, call, given.get("rules"))
    if found is None:
        return LetInfo(name, decl, None)
    schemas, morphisms = found
    if morphisms:
        note(ctx, decl.name.span, f"{decl.keyword} {name} (a parser over morphism rules)")
        return LetInfo(name, decl, None)
    grammar = _grammar(ctx, name, call, given, schemas)
    if grammar is None:
        return LetInfo(name, decl, None)
    terminal_t = ctx.objects[grammar.terminal]
    t = Arrow(Seq(Product((terminal_t,), (grammar.terminal,))), SCORE)
    ctx.record_type(decl.name.span, t, grammar.summary())
    ctx.record_type(call.span, t, grammar.summary())
    ctx.expr_types[call] = t
    return LetInfo(name, decl, t, grammar)


def _keywords(ctx: Context, call: ast.Call) -> dict[str, ast.KeywordArg] | None:
    """The call's keyword arguments by key; None after an unknown or repeated one."""
    given: dict[str, ast.KeywordArg] = {}
    ok = True
    for kw in call.kwargs:
        key = kw.key.text
        if key not in PARSER_KEYWORDS:
            ctx.unknown_option(kw.key, "parser", list(PARSER_KEYWORDS))
            ok = False
        elif key in given:
            ctx.report(rules.DUPLICATE_OPTION, f"parser's {key} is given twice", kw.key.span)
            ok = False
        else:
            given[key] = kw
    return given if ok else None


def _names(ctx: Context, kw: ast.KeywordArg) -> list[ast.Name] | None:
    """A keyword's list of names (`rules=[a, b]`), or None after reporting."""
    items = kw.value.items if isinstance(kw.value, ast.ListArg) else (kw.value,)
    names = [i.name for i in items if isinstance(i, ast.NameRef)]
    if len(names) != len(items) or not isinstance(kw.value, ast.ListArg):
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"parser's {kw.key.text} takes a list of names: {kw.key.text}=[a, b]",
            kw.value.span,
        )
        return None
    return names


def _rules(
    ctx: Context, call: ast.Call, kw: ast.KeywordArg | None
) -> tuple[list[tuple[PatternRule, ...]], list[str]] | None:
    """The schemas the rules name, bundles spliced in (each a tuple of pattern rules), and
    the morphisms they name; None after reporting."""
    if kw is None:
        ctx.report(
            rules.GRAMMAR_TERM,
            "parser needs at least one rule: rules=[...] names rules, schemas or bundles",
            call.callee.span,
        )
        return None
    written = _names(ctx, kw)
    if written is None:
        return None
    schemas: list[tuple[PatternRule, ...]] = []
    morphisms: list[str] = []
    ok = True
    for name in written:
        for member in _expand(ctx, name):
            if member is None:
                ok = False
            elif isinstance(member, str):
                morphisms.append(member)
            else:
                schemas.append(member)
    if not ok:
        return None
    if schemas and morphisms:
        ctx.report(
            rules.GRAMMAR_TERM,
            "parser's rules are all schemas (rules, schemas, bundles) or all morphisms, "
            f"not a mix (the morphisms: {', '.join(morphisms)})",
            kw.value.span,
        )
        return None
    if not schemas and not morphisms:
        ctx.report(rules.GRAMMAR_TERM, "parser needs at least one rule", kw.value.span)
        return None
    return schemas, morphisms


def _expand(
    ctx: Context, name: ast.Name, seen: frozenset[str] = frozenset()
) -> list[tuple[PatternRule, ...] | str | None]:
    """What one name of `rules=[...]` stands for: a schema's rules, a morphism's name, a
    bundle's members in order, or None where it names nothing (reported)."""
    text = name.text
    decl = ctx.top.get(text)
    if decl is not None and is_grammar(decl) and decl.clause.kind == "bundle":
        if text in seen:
            ctx.report(rules.CYCLIC_DEFINITION, f"bundle {text} lists itself", name.span)
            return [None]
        members = [p for p in decl.clause.parts[1:] if isinstance(p, ast.Name)]
        out: list[tuple[PatternRule, ...] | str | None] = []
        for m in members:
            # a member naming nothing is reported at the bundle already
            if m.text in ctx.top or m.text in SCHEMAS:
                out.extend(_expand(ctx, m, seen | {text}))
            else:
                out.append(None)
        return out
    if decl is not None and is_grammar(decl) and decl.clause.kind in ("rule", "schema"):
        rule = declared_rule(decl)
        return [(rule,) if rule is not None else None]
    if decl is None and text in SCHEMAS:
        return [SCHEMAS[text].rules]
    if isinstance(decl, ast.MorphismDecl):
        return [text]
    if decl is None:
        candidates = [
            *(n for n, d in ctx.top.items() if is_grammar(d) and d.clause.kind != "category"),
            *SCHEMAS,
        ]
        ctx.undefined(name, "rule, schema or bundle", candidates)
    else:
        ctx.report(
            rules.WRONG_KIND,
            f"'{text}' is no rule, schema, bundle or morphism: parser's rules name those",
            name.span,
        )
    return [None]


def declared_rule(decl: ast.OtherDecl) -> PatternRule | None:
    """A `rule` or `schema` declaration as a pattern rule (quivers' `_compile_rule`,
    `_compile_schema`): a schema whose domain is a product of two parts is binary, any
    other unary; a rule has its premises before the conclusion. None for a rule of
    other than one or two premises (reported at the rule)."""
    clause = decl.clause
    variables = {p.text for p in clause.parts[1:] if isinstance(p, ast.Name)}
    for group in clause.parts:
        if isinstance(group, ast.Clause) and group.kind == "schema_param":
            variables |= {n.text for n in group.parts if isinstance(n, ast.Name)}
    written = [p for p in clause.parts[1:] if not isinstance(p, ast.Name | ast.Clause)]
    patterns = [pattern(p, variables) for p in written]
    if clause.kind == "schema":
        if len(patterns) != 2:
            return None
        domain, codomain = patterns
        if domain[0] == "product" and len(parts(domain)) == 2:
            left, right = parts(domain)
            return PatternRule((left, right), codomain)
        return PatternRule((domain,), codomain)
    if len(patterns) - 1 not in (1, 2):
        return None
    return PatternRule(tuple(patterns[:-1]), patterns[-1])


def pattern(node: object, variables: set[str]) -> Pattern:
    """An object expression of a rule as a pattern: a name is a variable of the rule or
    an atom, `/` and `\\` make slashes (result first), a product's parts are flattened
    (quivers' `ObjectProduct`); anything else matches no category."""
    if isinstance(node, ast.TypeRef):
        names = [_name(f.text, variables) for f in node.factors]
        return names[0] if len(names) == 1 else ("product", tuple(names))
    if isinstance(node, ast.ObjBinary) and node.op in ("/", "\\"):
        return ("slash", pattern(node.left, variables), pattern(node.right, variables), node.op)
    if isinstance(node, ast.ObjBinary) and node.op == "*":
        flat: list[Pattern] = []
        for side in (node.left, node.right):
            p = pattern(side, variables)
            flat.extend(parts(p) if p[0] == "product" else (p,))
        return ("product", tuple(flat))
    return ("never",)


def _name(text: str, variables: set[str]) -> Pattern:
    return ("var", text) if text in variables else ("atom", text)


def _grammar(
    ctx: Context,
    name: str,
    call: ast.Call,
    given: dict[str, ast.KeywordArg],
    schemas: Sequence[tuple[PatternRule, ...]],
) -> ChartGrammar | None:
    """The inventory and rules of a schema parser; None after reporting."""
    atoms = _atoms(ctx, call, given.get("categories"))
    depth = _depth(ctx, given.get("depth"))
    ops = _constructors(ctx, given.get("constructors"))
    terminal = _terminal(ctx, call, given.get("terminal"))
    if atoms is None or depth is None or ops is None or terminal is None:
        return None
    size = closure_size(len(atoms), depth, ops)
    if size is None or size > MAX_PARSER_CATEGORIES:
        where = given.get("depth") or call.callee
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"parser {name} would have more than {format_count(MAX_PARSER_CATEGORIES)} "
            f"categories ({len(atoms)} atoms, depth {depth}, {', '.join(ops)}): its chart "
            "holds a weight per span and category; lower the depth",
            where.span,
        )
        return None
    cats = inventory(atoms, depth, ops)
    start = _start(ctx, call, given.get("start"), atoms)
    if start is None:
        return None
    try:
        binary, unary = rules_of(cats, schemas)
    except TooManyTests:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"parser {name}'s rules would take more than {format_count(MAX_TESTS)} tests "
            f"of its {format_count(len(cats))} categories to instantiate: lower the depth",
            given["rules"].value.span,
        )
        return None
    terminal_t = ctx.objects[terminal]
    return ChartGrammar(
        name, texts(cats), terminal, terminal_t.size, cats.index(("atom", start)), binary, unary
    )


def _atoms(ctx: Context, call: ast.Call, kw: ast.KeywordArg | None) -> list[str] | None:
    if kw is not None:
        names = _names(ctx, kw)
        return None if names is None else list(dict.fromkeys(n.text for n in names))
    declared = [
        n.text
        for d in ctx.top.values()
        if is_grammar(d) and d.clause.kind == "category"
        for n in d.clause.parts
        if isinstance(n, ast.Name)
    ]
    if declared:
        return list(dict.fromkeys(declared))
    universes = universe_atoms(ctx)
    if len(universes) == 1:
        return list(universes[0][1])
    if universes:
        ctx.report(
            rules.GRAMMAR_TERM,
            f"parser's atoms: the file has {len(universes)} FreeResiduated universes "
            f"({', '.join(u for u, _ in universes)}); say which with categories=[...]",
            call.callee.span,
        )
    else:
        ctx.report(
            rules.GRAMMAR_TERM,
            "parser needs category atoms: declare `object Atoms : {N, NP, S}` and "
            "`object Cat : FreeResiduated(Atoms)`, or `category N, NP, S`, or give "
            "categories=[N, NP, S]",
            call.callee.span,
        )
    return None


def _depth(ctx: Context, kw: ast.KeywordArg | None) -> int | None:
    if kw is None:
        return 1
    v = kw.value
    if isinstance(v, ast.Literal) and v.kind == "int" and int(v.value) >= 0:
        return int(v.value)
    ctx.report(rules.INVALID_OPTION_VALUE, "parser's depth is a whole number >= 0", kw.value.span)
    return None


def _constructors(ctx: Context, kw: ast.KeywordArg | None) -> tuple[str, ...] | None:
    if kw is None:
        return ("slash",)
    names = _names(ctx, kw)
    if names is None:
        return None
    bad = [n for n in names if n.text not in RESIDUATED_CONNECTIVES]
    for n in bad:
        ctx.did_you_mean(
            rules.INVALID_OPTION_VALUE,
            f"'{n.text}' is no connective (parser's constructors are "
            f"{', '.join(RESIDUATED_CONNECTIVES)})",
            n.span,
            n.text,
            list(RESIDUATED_CONNECTIVES),
        )
    return None if bad or not names else tuple(n.text for n in names)


def _terminal(ctx: Context, call: ast.Call, kw: ast.KeywordArg | None) -> str | None:
    if kw is None:
        ctx.report(
            rules.GRAMMAR_TERM,
            "parser needs terminal=<object>: the finite set of its tokens",
            call.callee.span,
        )
        return None
    word = kw.word
    t = ctx.objects.get(word)
    if t is None:
        if word in ctx.object_decls:
            return None  # the object has an error, reported where it is declared
        ctx.did_you_mean(
            rules.UNDEFINED_NAME,
            f"parser's terminal={word or ctx.source(kw.value.span)} is no declared object",
            kw.value.span,
            word,
            list(ctx.object_decls),
        )
        return None
    if not t.discrete:
        ctx.report(
            rules.WRONG_KIND,
            f"parser's terminal {word} is {t.describe()}: the tokens are a finite set's "
            "values, which index the lexicon",
            kw.value.span,
        )
        return None
    return word


def _start(ctx: Context, call: ast.Call, kw: ast.KeywordArg | None, atoms: list[str]) -> str | None:
    start = "S"
    span = None
    if kw is not None:
        v = kw.value
        span = v.span
        if isinstance(v, ast.Literal) and v.kind == "int":
            ctx.report(
                rules.GRAMMAR_READ_OTHERWISE,
                f"start={v.raw}: a parser over schemas names its start category, and "
                "quivers reads a number there as S",
                span,
            )
        elif kw.word:
            start = kw.word
    if start in atoms:
        return start
    if span is None:
        ctx.report(
            rules.GRAMMAR_TERM,
            f"parser starts from S by default, which is not among its atoms "
            f"({', '.join(atoms)}): give start=<atom>",
            call.callee.span,
        )
    else:
        ctx.did_you_mean(
            rules.GRAMMAR_TERM,
            f"parser's start category {start} is not among its atoms ({', '.join(atoms)})",
            span,
            start,
            atoms,
        )
    return None
