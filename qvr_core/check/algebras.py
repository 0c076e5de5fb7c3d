"""The `composition` declaration: which algebra enriches the file's morphisms.

`composition NAME [level=L]` (quivers 0.15 on; `composition NAME as L` in 0.11-0.14)
names a rule of the registry (`qvr_core.builtins.algebras`) or, with an indented
body, defines one (`tensor_op(a, b) = ...`, `join(t) = ...`, `unit = ...`, ...).
What is checked is what quivers 0.25.2's compiler refuses
(`dsl/parser/statements.py` `_walk_composition_decl`, `dsl/compiler/declarations.py`
`_compile_composition` and `_build_custom_composition_rule`): an option other than
`level`, an unknown level, an unknown rule (looked up lower-cased), a registered rule
below the declared level, a body without the entries of its level, a function entry
written as a value or the reverse, a duplicate entry, a value entry that reads a name.

quivers enriches each morphism over the rule declared above it and refuses `>>`
between morphisms of different rules; qvr gives a file one rule (`CheckedModule.algebra`,
which the runtime reads), so a second declaration, or a latent morphism declared
above the first, is reported instead of meaning something else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

from qvr_core.builtins.algebras import (
    ALGEBRAS,
    FUNCTION_ENTRIES,
    LEVELS,
    OPTIONAL_ENTRIES,
    REQUIRED_ENTRIES,
    Level,
)
from qvr_core.check.context import Context, suggest
from qvr_core.check.module import ModuleAlgebra, MorphismInfo
from qvr_core.check.unchecked import refer
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Related, Severity
from qvr_core.text.span import Span

COMPOSITION = "composition"


def is_composition(decl: ast.Decl) -> bool:
    """Whether `decl` is a `composition` declaration (kept as a generic clause)."""
    return isinstance(decl, ast.OtherDecl) and decl.clause.kind == COMPOSITION


def check_compositions(
    ctx: Context, decls: tuple[ast.Decl, ...], morphisms: Mapping[str, MorphismInfo]
) -> ModuleAlgebra | None:
    """Check every `composition` declaration of the file (in order) and return the file's
    rule: the first declaration's, None when there is none or it is wrong."""
    found = [d for d in decls if isinstance(d, ast.OtherDecl) and is_composition(d)]
    if not found:
        return None
    first = found[0]
    algebra = _check_one(ctx, first)
    first_at = ctx.real(first, first.name.span)
    for extra in found[1:]:
        _check_one(ctx, extra)
        ctx.report(
            rules.COMPOSITION_RULE,
            f"a second composition declaration: quivers enriches each morphism over the rule "
            f"declared above it, qvr takes one rule per file (the first, "
            f"{first.name.text} on line {first_at.start_line + 1}); keep one",
            ctx.real(extra, extra.name.span),
            related=(Related(first_at, "the file's composition rule"),),
        )
    for d in decls:
        if d is first:
            break
        if not isinstance(d, ast.MorphismDecl):
            continue
        for name in d.names:
            info = morphisms.get(name.text)
            if info is not None and info.role == "latent":
                ctx.report(
                    rules.COMPOSITION_RULE,
                    f"latent morphism {name.text} is declared above `composition "
                    f"{first.name.text}`: quivers enriches it over product_fuzzy (the rule "
                    "when none is declared above) and refuses to compose it with the "
                    "morphisms declared below; move the composition declaration above it",
                    ctx.real(d, name.span),
                    related=(Related(first_at, "the composition declaration"),),
                )
    return algebra


def _check_one(ctx: Context, decl: ast.OtherDecl) -> ModuleAlgebra | None:
    clause = decl.clause
    refer(ctx, clause, frozenset(id(n) for n in clause.names))
    name = decl.name
    level, level_at = _level(ctx, decl)
    if level is None:
        return None
    if clause.body:
        if not _check_body(ctx, decl, level):
            return None
        return ModuleAlgebra(name.text, level, None, ctx.real(decl, name.span))
    key = name.text.lower()  # quivers looks the name up lower-cased
    rule = ALGEBRAS.get(key)
    if rule is None:
        ctx.did_you_mean(
            rules.UNDEFINED_NAME,
            f"unknown composition rule '{name.text}'",
            ctx.real(decl, name.span),
            name.text,
            list(ALGEBRAS),
            otherwise=f": the registered rules are {', '.join(sorted(ALGEBRAS))}",
        )
        return None
    if not rule.at_level(level):
        fits = [lv for lv in LEVELS if rule.at_level(lv)]
        ctx.report(
            rules.COMPOSITION_RULE,
            f"composition {name.text}: the registered rule is a {rule.level}, not at level "
            f"{level}; declare it at one of its levels ({', '.join(fits)})",
            ctx.real(decl, level_at or name.span),
        )
        return None
    return ModuleAlgebra(name.text, level, rule.name, ctx.real(decl, name.span))


def _level(ctx: Context, decl: ast.OtherDecl) -> tuple[Level | None, Span | None]:
    """The declared level and where it is written (`rule`, nowhere, when none is); None
    for the level after reporting why it is not one."""
    level: Level = "rule"
    at: Span | None = None
    seen = False
    ok = True
    for part in decl.clause.parts[1:]:
        if isinstance(part, ast.Option):
            if part.key.text != "level":
                ctx.report(
                    rules.UNKNOWN_OPTION,
                    f"composition {decl.name.text} takes one option, level; "
                    f"'{part.key.text}' is not one",
                    ctx.real(decl, part.key.span),
                )
                ok = False
                continue
            if seen:
                ctx.report(
                    rules.DUPLICATE_OPTION,
                    "the option level is given twice",
                    ctx.real(decl, part.key.span),
                )
                ok = False
                continue
            seen = True
            value = part.value
            written = value.value if isinstance(value, ast.Literal) else None
            where = value.span if value is not None else part.span
        elif isinstance(part, ast.Name):  # 0.11-0.14's `composition real as algebra`
            written, where = part.text, part.span
        else:
            continue
        found = _as_level(written)
        if found is None:
            shown = written if isinstance(written, str) else ctx.source(where)
            ctx.did_you_mean(
                rules.INVALID_OPTION_VALUE,
                f"unknown composition level '{shown}'",
                ctx.real(decl, where),
                shown,
                list(LEVELS),
                otherwise=f": the levels are {', '.join(LEVELS)}",
            )
            ok = False
            continue
        level, at = found, where
    return (level if ok else None), at


def _as_level(written: object) -> Level | None:
    for level in LEVELS:
        if written == level:
            return level
    return None


def _check_body(ctx: Context, decl: ast.OtherDecl, level: Level) -> bool:
    """The entries of an inline body against its level; True when quivers would build it."""
    ok = True
    entries: dict[str, ast.Clause] = {}
    allowed = (*REQUIRED_ENTRIES[level], *OPTIONAL_ENTRIES[level])
    for entry in decl.clause.body:
        if not entry.parts or not isinstance(entry.parts[0], ast.Name):
            continue
        key = entry.parts[0]
        params = [p for p in entry.parts[1:-1] if isinstance(p, ast.Name)]
        body = entry.parts[-1]
        if key.text in entries:
            ctx.report(
                rules.COMPOSITION_RULE,
                f"composition {decl.name.text}: the entry {key.text} is given twice",
                ctx.real(decl, key.span),
            )
            ok = False
            continue
        entries[key.text] = entry
        if key.text not in allowed:
            close = suggest(key.text, list(allowed))
            meant = f"; did you mean '{close[0]}'?" if close else ""
            ctx.report(
                rules.COMPOSITION_RULE,
                f"composition {decl.name.text}: a {level} body has no entry '{key.text}' "
                f"(quivers reads it and never uses it; its entries are "
                f"{', '.join(allowed)}){meant}",
                ctx.real(decl, key.span),
                severity=Severity.WARNING,
            )
            continue
        ok = _check_entry(ctx, decl, key, params, body) and ok
    missing = [k for k in REQUIRED_ENTRIES[level] if k not in entries]
    if missing:
        ctx.report(
            rules.COMPOSITION_RULE,
            f"composition {decl.name.text}: a {level} body needs "
            f"{', '.join(REQUIRED_ENTRIES[level])}; {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing",
            ctx.real(decl, decl.name.span),
        )
        ok = False
    return ok


def _check_entry(
    ctx: Context, decl: ast.OtherDecl, key: ast.Name, params: list[ast.Name], body: object
) -> bool:
    """Report an entry written against its kind (a value, or a function of its arity)."""
    problem = _entry_problem(key, params, body)
    if problem is None:
        return True
    message, span = problem
    ctx.report(
        rules.COMPOSITION_RULE, f"composition {decl.name.text}: {message}", ctx.real(decl, span)
    )
    return False


def _entry_problem(key: ast.Name, params: list[ast.Name], body: object) -> tuple[str, Span] | None:
    """What is wrong with one body entry, and where, or None."""
    arity = FUNCTION_ENTRIES.get(key.text)
    free = [v for v in _vars(body) if v.name.text not in {p.text for p in params}]
    if arity is None:  # a value: `unit = 1.0`
        if params:
            return (
                f"{key.text} is a value entry, written without parameters (`{key.text} = 1.0`)",
                key.span,
            )
        if free:
            return (
                f"the value of {key.text} is computed when the file compiles, from numbers "
                f"only; '{free[0].name.text}' is not one",
                free[0].span,
            )
        return None
    if len(params) != arity:
        shape = "(a, b)" if arity == 2 else "(t)"
        return (
            f"{key.text} is a function of {arity} parameter{'s' if arity > 1 else ''}, "
            f"written `{key.text}{shape} = ...`",
            key.span,
        )
    if free:
        return (
            f"{key.text} reads '{free[0].name.text}', which is not one of its parameters "
            f"({', '.join(p.text for p in params)})",
            free[0].span,
        )
    return None


def _vars(node: object) -> Iterator[ast.Var]:
    """The variables an entry's arithmetic reads, in source order."""
    if isinstance(node, ast.Var):
        yield node
    elif isinstance(node, tuple):
        for item in node:
            yield from _vars(item)
    elif type(node) is not Span and dataclasses.is_dataclass(node):
        for f in dataclasses.fields(node):
            yield from _vars(getattr(node, f.name))
