"""Refactors of lets: extract a sub-expression into a new top-level let, inline a let.

Both work on the checked module and return text edits, so every editor gets
the same ones. Each is offered only where the result means the same thing:

- **extract**: a morphism sub-expression the checker typed (of a let's
  expression or a program step's source), whose names are all top-level (a
  program's local values cannot leave the program), becomes `let NAME = ...`
  placed before the declaration that uses it (above that declaration's
  comments), with the keyword the file already uses (`let` or `define`); the
  expression is replaced by NAME.
- **inline**: a let without a `where` block is replaced at each use by its
  expression (in parentheses when it is a composition or product used as an
  operand of `>>` or `@`), and its declaration (with its doc comment) is removed.
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.ide.rename import RenameError, validate_name
from qvr_core.syntax import ast
from qvr_core.syntax.walk import walk
from qvr_core.text.diagnostics import TextEdit
from qvr_core.text.span import Span

EXTRACTED_NAME = "extracted"


@dataclass(frozen=True)
class Refactor:
    title: str
    edits: tuple[TextEdit, ...]


# ------------------------------------------------------------------ extract


def extract(module: CheckedModule, start: int, end: int) -> Refactor | None:
    """Extract the expression selected by [start, end) (or, for a cursor or a selection
    inside one name, the smallest composite expression around it) into a new top-level
    let; None when it cannot be."""
    found = _extractable(module, start, end)
    if found is None:
        return None
    decl, expr = found
    text = module.source[expr.span.start : expr.span.end]
    name = _fresh_name(module)
    keyword = next((d.keyword for d in module.ast.decls if isinstance(d, ast.LetDecl)), "let")
    at = _above_comments(module, decl.span.start)
    line_end = "\r\n" if "\r\n" in module.source else "\n"
    flat = " ".join(text.split())
    insert = TextEdit(_empty_span(module, at), f"{keyword} {name} = {flat}{line_end}")
    replace = TextEdit(expr.span, name)
    title = f"Extract `{_short(flat)}` into `{keyword} {name}`"
    return Refactor(title, (insert, replace))


def _extractable(module: CheckedModule, start: int, end: int) -> tuple[ast.Decl, ast.Expr] | None:
    decl = next((d for d in module.ast.decls if d.span.start <= start and end <= d.span.end), None)
    if not isinstance(decl, ast.LetDecl | ast.ProgramDecl):
        return None
    if isinstance(decl, ast.LetDecl) and decl.where:
        return None
    start, end = _trim(module.source, start, end)
    candidates = [
        node
        for node in walk(decl)
        if isinstance(node, ast.Compose | ast.Tensor | ast.Call)
        and node in module.expr_types
        and node.span.start <= start
        and end <= node.span.end
    ]
    if not candidates:
        return None
    expr = min(candidates, key=lambda n: n.span.length)
    exact = (expr.span.start, expr.span.end) == (start, end)
    if start != end and not exact and not _within_a_name(decl, start, end):
        return None  # a selection that is not one expression
    if isinstance(decl, ast.LetDecl) and expr is decl.expr:
        return None  # the whole let already has a name
    if not _all_names_top_level(module, expr):
        return None
    return decl, expr


def _within_a_name(decl: ast.Decl, start: int, end: int) -> bool:
    """A selection inside one name (editors send the word under the cursor): like a cursor."""
    return any(
        isinstance(n, ast.NameRef) and n.span.start <= start and end <= n.span.end
        for n in walk(decl)
    )


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The selection without surrounding blanks and balanced outer parentheses."""
    while True:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end - start >= 2 and text[start] == "(" and text[end - 1] == ")":
            depth = 0
            for i in range(start, end):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                if depth == 0 and i < end - 1:
                    return start, end  # "(a) >> (b)": the parentheses are not outer
            start, end = start + 1, end - 1
            continue
        return start, end


def _all_names_top_level(module: CheckedModule, expr: ast.Expr) -> bool:
    for node in walk(expr):
        if isinstance(node, ast.NameRef):
            ref = module.symbols.reference_at(node.span.start)
            if ref is None or ref.symbol.scope is not None:
                return False
    return True


def _fresh_name(module: CheckedModule) -> str:
    taken = {s.name for s in module.symbols.symbols}
    for n in range(1, 10_000):
        name = EXTRACTED_NAME if n == 1 else f"{EXTRACTED_NAME}_{n}"
        if name not in taken and _valid(name):
            return name
    raise AssertionError("no free name")  # 10,000 lets called extracted_n: not a real file


def _valid(name: str) -> bool:
    try:
        validate_name(name)
    except RenameError:
        return False
    return True


# ------------------------------------------------------------------- inline


def inline(module: CheckedModule, offset: int) -> Refactor | None:
    """Inline the let named at `offset` (its declaration or a use) into every use."""
    ref = module.symbols.reference_at(offset)
    if ref is None or ref.symbol.kind is not SymbolKind.LET or ref.symbol.scope is not None:
        return None
    symbol = ref.symbol
    decl = next(
        (d for d in module.ast.decls if isinstance(d, ast.LetDecl) and d.name.span == symbol.span),
        None,
    )
    if decl is None or decl.where:
        return None
    uses = [r for r in module.symbols.references_to(symbol) if not r.is_definition]
    if not uses or any(decl.span.covers(r.span) for r in uses):
        return None  # unused, or defined in terms of itself
    if not all(r.span in _morphism_names(module) for r in uses):
        return None  # a use that is not a morphism expression (a call with values)
    text = " ".join(module.source[decl.expr.span.start : decl.expr.span.end].split())
    wrapped = f"({text})" if isinstance(decl.expr, ast.Compose | ast.Tensor) else text
    edits = [TextEdit(r.span, text if _alone(module, r.span) else wrapped) for r in uses]
    edits.append(TextEdit(_declaration_lines(module, decl), ""))
    return Refactor(
        f"Inline `{decl.keyword} {symbol.name}` into its {_uses(len(uses))}", tuple(edits)
    )


def _alone(module: CheckedModule, span: Span) -> bool:
    """Whether a use needs no parentheses: it is not an operand of `>>` or `@`."""
    for decl in module.ast.decls:
        if not decl.span.covers(span):
            continue
        for node in walk(decl):
            if isinstance(node, ast.Compose | ast.Tensor) and span in (
                node.left.span,
                node.right.span,
            ):
                return False
    return True


def _morphism_names(module: CheckedModule) -> set[Span]:
    """Spans of the names the checker typed as morphism expressions."""
    return {e.span for e in module.expr_types if isinstance(e, ast.NameRef)}


def _uses(n: int) -> str:
    return "use" if n == 1 else f"{n} uses"


def _declaration_lines(module: CheckedModule, decl: ast.LetDecl) -> Span:
    """The declaration's whole lines, with its doc comment (`#!`) lines above it."""
    lines = module.lines
    source = module.source
    first = decl.span.start_line
    while first > 0 and _line_text(module, first - 1).lstrip().startswith("#!"):
        first -= 1
    start = lines.offset(first, 0)
    end = decl.span.end
    newline = source.find("\n", end)
    end = len(source) if newline < 0 else newline + 1
    return _span(module, start, end)


# ---------------------------------------------------------------- helpers


def _above_comments(module: CheckedModule, offset: int) -> int:
    """The start of the line of `offset`, moved up over the comment lines right above it."""
    line = module.lines.position(offset)[0]
    while line > 0 and _line_text(module, line - 1).lstrip().startswith("#"):
        line -= 1
    return module.lines.offset(line, 0)


def _line_text(module: CheckedModule, line: int) -> str:
    return module.lines.line_text(line)


def _empty_span(module: CheckedModule, offset: int) -> Span:
    return module.lines.span(offset, offset)


def _span(module: CheckedModule, start: int, end: int) -> Span:
    return module.lines.span(start, end)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
