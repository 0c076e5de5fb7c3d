"""Hover: the inferred type and dimensions of the name or sub-expression under the cursor.

Plain Markdown that Neovim's floating window renders as well as VS Code: a
fenced `qvr` block with the declaration (or `expression : type`), the
dimensions (`FwdHidden * BwdHidden = R^(64+64)`), the checker's note (a
bidirectional branch reads right to left), the doc comment and where the
name is declared. Everything shown is read from the CheckedModule. On the
first line of the first declaration it also says the era of quivers the file is
written for (`qvr_core.syntax.era`), so a reader knows which dialect they are in. For a
let that does not type-check it shows the type of each part that does and the
errors in one line each (`qvr_core.ide.known`). The
answer is a plain value (`HoverText`) that `qvr_lsp/features/hover.py` converts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from qvr_core.check.lambdas import LambdaValue
from qvr_core.check.module import CheckedModule, Symbol, SymbolKind
from qvr_core.check.residuated import ResiduatedPattern
from qvr_core.check.types import (
    Arrow,
    Group,
    ObjectType,
    Plated,
    Product,
    Scalar,
    Seq,
    dims_text,
    sum_text,
)
from qvr_core.check.user_effects import UserEffect
from qvr_core.ide.builtins_info import algebra_at, builtin_at, transformation_at
from qvr_core.ide.known import PartialKnowledge, known_parts
from qvr_core.syntax.era import era
from qvr_core.text.span import Span

KIND_WORDS = {
    SymbolKind.OBJECT: "object",
    SymbolKind.MORPHISM: "morphism",
    SymbolKind.LET: "let",
    SymbolKind.PROGRAM: "program",
    SymbolKind.PARAM: "parameter",
    SymbolKind.SAMPLE: "sampled site",
    SymbolKind.OBSERVE: "observed site",
    SymbolKind.LOCAL: "local value",
    SymbolKind.DATA: "data variable",
    SymbolKind.DECLARATION: "declaration",
}


_DATA_NOTE = "data: no step binds it; its value comes from the data when the model is fitted"
_OBSERVED_NOTE = "its value is data: the observations bound when the model is fitted"


@dataclass(frozen=True)
class HoverText:
    """The same text as Markdown and as plain text (for a client without Markdown)."""

    markdown: str
    plain: str
    span: Span


def hover_at(
    module: CheckedModule, offset: int, place: Callable[[Span], Span] | None = None
) -> HoverText | None:
    """What to show at `offset`: the symbol named there, else the narrowest typed node,
    and the file's era on the first line of its first declaration.

    `place` says where the module's spans are in the text the answer is for,
    when that is a later version of the module's text (`qvr_core.ide.carried`).
    """
    found = _hover(module, offset, place or _here)
    note = era_note(module, offset)
    if note is not None:
        found = note if found is None else _with(found, note)
    if found is None or place is None:
        return found
    return replace(found, span=place(found.span))


def _here(span: Span) -> Span:
    return span


def _hover(module: CheckedModule, offset: int, place: Callable[[Span], Span]) -> HoverText | None:
    rule = algebra_at(module, offset) or transformation_at(module, offset)
    if rule is not None:  # `composition real`: the rule, not the declared name
        info, span = rule
        return _compose(info.signature, [], "", info.doc, f"QVR {info.kind}", span)
    typed = module.type_at(offset)
    ref = module.symbols.reference_at(offset)
    if ref is not None:
        note = typed.note if typed is not None and typed.span == ref.span else ""
        note = note or _tuple_part(module, ref.symbol) or _summary(module, ref.symbol)
        found = _symbol_hover(ref.symbol, ref.span, note, place)
        if ref.symbol.type is None and ref.symbol.kind is SymbolKind.LET:
            known = known_parts(module, ref.symbol.decl_span)
            if known is not None:
                return _with_known_parts(found, known)
        return found
    builtin = builtin_at(module, offset)
    if typed is not None:
        head = f"{typed.label} : {_label(typed.type)}"
        doc = f"`{builtin[0].signature}`: {builtin[0].doc}" if builtin is not None else None
        return _compose(head, _dimensions(typed.type), typed.note, doc, None, typed.span)
    if builtin is not None:
        info, span = builtin
        return _compose(info.signature, [], "", info.doc, f"QVR {info.kind}", span)
    return None


def _summary(module: CheckedModule, symbol: Symbol) -> str:
    """What a checked `deduction` (semiring, goal, size) or `contraction` (signature, rule,
    wiring) computes, wherever its name is; the checker's records say it."""
    if symbol.scope is not None:
        return ""
    found = (
        module.deductions.get(symbol.name)
        or module.contractions.get(symbol.name)
        or module.qiec.get(symbol.name)
    )
    if found is not None:
        return found.summary()
    morphism = module.morphisms.get(symbol.name)
    if morphism is not None and morphism.role == "kernel" and morphism.family is None:
        t = morphism.type
        return (
            f"a table kernel: for each value of {t.dom.label}, a categorical distribution "
            f"over {t.cod.label}, learned (no family; quivers' StochasticMorphism)"
        )
    return ""


def _tuple_part(module: CheckedModule, symbol: Symbol) -> str:
    """`part 2 of 2 of the tuple site (h, c) : [State]`: where a name of a tuple site
    takes its value from."""
    if symbol.kind not in (SymbolKind.SAMPLE, SymbolKind.OBSERVE) or symbol.scope is None:
        return ""
    program = module.programs.get(symbol.scope)
    for site in program.sites if program is not None else ():
        if symbol.name in site.parts:
            whole = f" : {site.value_type.label}" if site.value_type is not None else ""
            index = site.parts.index(symbol.name) + 1
            return f"part {index} of {len(site.parts)} of the tuple site {site.name}{whole}"
    return ""


def era_note(module: CheckedModule, offset: int) -> HoverText | None:
    """`written for quivers 0.11-0.14 (top-level let)`, when `offset` is on the first
    line of the file's first declaration."""
    decls = module.ast.decls
    if not decls:
        return None
    first = decls[0].span
    line_end = module.source.find("\n", first.start)
    end = min(first.end, len(module.source) if line_end < 0 else line_end)
    if not first.start <= offset <= end:
        return None
    note = f"written for {era(module.ast, module.diagnostics, module.source).label}"
    col = first.start_col + end - first.start
    span = Span(first.start, end, first.start_line, first.start_col, first.start_line, col)
    return HoverText(f"*{note}*", note, span)


def _with(found: HoverText, note: HoverText) -> HoverText:
    markdown = f"{found.markdown}\n\n{note.markdown}"
    return HoverText(markdown, f"{found.plain}\n\n{note.plain}", found.span)


def _symbol_hover(
    symbol: Symbol, span: Span, note: str, place: Callable[[Span], Span] = _here
) -> HoverText:
    head = symbol.detail or f"{symbol.kind.value} {symbol.name}"
    kind = KIND_WORDS.get(symbol.kind, symbol.kind.value)
    line = place(symbol.span).start_line + 1
    where = f"{kind} declared on line {line}"
    if symbol.kind is SymbolKind.DATA:
        where = f"{kind}, first read on line {line}"
        note = note or _DATA_NOTE
    elif symbol.kind is SymbolKind.OBSERVE:
        note = note or _OBSERVED_NOTE
    if symbol.scope is not None:
        where += f" in program {symbol.scope}"
    return _compose(head, _dimensions(symbol.type), note, symbol.doc, where, span)


def _with_known_parts(found: HoverText, known: PartialKnowledge) -> HoverText:
    """The declaration's hover, then what type-checks of it, then what does not."""
    md = [f"- `{_short(p.text)}` : {_arrow_dims(p.type)}" for p in known.parts]
    plain = [f"- {_short(p.text)} : {_arrow_dims(p.type).replace('`', '')}" for p in known.parts]
    md += [f"- **✗** {problem}" for problem in known.problems]
    plain += [f"- ✗ {problem}" for problem in known.problems]
    head_md, _, rest_md = found.markdown.partition("\n\n")
    head_plain, _, rest_plain = found.plain.partition("\n\n")
    markdown = "\n\n".join(x for x in (head_md, "Its parts:\n" + "\n".join(md), rest_md) if x)
    plain_text = "\n\n".join(
        x for x in (head_plain, "Its parts:\n" + "\n".join(plain), rest_plain) if x
    )
    return HoverText(markdown, plain_text, found.span)


def _arrow_dims(t: Arrow | Group) -> str:
    """`input -> output` with dimensions on one line."""
    if isinstance(t, Arrow):
        return f"{_value(t.dom)} → {_value(t.cod)}"
    return _dimensions(t)[0]


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _compose(
    head: str, dims: list[str], note: str, doc: str | None, where: str | None, span: Span
) -> HoverText:
    md = [f"```qvr\n{head}\n```"]
    plain = [head]
    if dims:
        md.append("\n".join(f"- {d}" for d in dims))
        plain.append("\n".join(d.replace("`", "") for d in dims))
    if note:
        md.append(f"*{note}*")
        plain.append(note)
    if doc:
        md.append(doc)
        plain.append(doc)
    if where:
        md.append(f"*{where}*")
        plain.append(where)
    return HoverText("\n\n".join(md), "\n\n".join(plain), span)


def _label(t: object) -> str:
    if isinstance(t, ObjectType):
        return t.describe()
    return getattr(t, "label", str(t))


def _dimensions(t: object) -> list[str]:
    """One line per value the type involves: `label = dims` (and the sum for products)."""
    if t is None or isinstance(t, LambdaValue):  # a let-bound lambda: no value to measure
        return []
    if isinstance(t, Arrow):
        return [f"input: {_value(t.dom)}", f"output: {_value(t.cod)}"]
    if isinstance(t, Group):
        member = t.member
        return [
            f"{t.count} independent copies, each {_value(member.dom)} to {_value(member.cod)}",
        ]
    if isinstance(t, ResiduatedPattern | UserEffect):  # no values: nothing to measure
        return []
    if isinstance(t, ObjectType):
        named = f", its elements {t.describe()}" if t.elements else ""
        return [f"`{t.name} = {dims_text(t)}`{named}"]
    if isinstance(t, Plated):
        return [_plated(t)]
    return [_value(t)]  # type: ignore[arg-type]  # the value types are left


def _plated(t: Plated) -> str:
    """`School -> R`: one real number per School (8)."""
    over = [f"{p.name} ({p.size if p.size >= 0 else 'chosen by the caller'})" for p in t.plates]
    if t.data_plates:
        over.append("data row (the data fixes how many)")
    each = f"`{t.element.label}`"
    return f"one {each} per {' x '.join(over)}" if over else f"one {each}"


def _value(t: Product | Seq | Scalar) -> str:
    if isinstance(t, Scalar):
        return "`scalar` (a plain number; broadcasts)"
    text = f"`{t.label} = {dims_text(t)}`"
    elem = t.elem if isinstance(t, Seq) else t
    if len(elem.factors) > 1 and elem.continuous:
        text += f" ({sum_text(elem)})"
    return text
