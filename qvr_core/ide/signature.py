"""Signature help: which call the cursor is in and which of its parameters it is on.

The call being typed usually does not parse yet, so the call is found in the
text (with the real lexer, `syntax.layout.split`, on the text before the
cursor: comments and bracket continuations are handled as the parser
handles them); what the callee means comes from the checked module, which
may be the last analysis that parsed.

Covered: every combinator of the registry (`fan`, `scan`, `scanl`, `stack`,
`repeat`, `identity`, the attention calls `multihead(query, key, value)` and
their kin) and quivers' chart `parser(rules=..., terminal=...)`, in `let` and `define`
alike; morphisms, lets and programs applied
to named values in program steps; the arithmetic builtins (`sigmoid(x)`,
`layer_norm(x)`, `min(a, b)`) in program `let`s; and family calls in program
steps (`Normal(loc, scale)`). Builtins are read from the registry
(`qvr_core.builtins`).
"""

from __future__ import annotations

from dataclasses import dataclass

from qvr_core.builtins import COMBINATORS, FAMILIES, FUNCTIONS, Family
from qvr_core.builtins.effects import COMPUTATION_FUNCTIONS
from qvr_core.builtins.functions import LIFTED
from qvr_core.builtins.schemas import PARSER, PARSER_DOC, PARSER_KEYWORDS
from qvr_core.builtins.transformations import CHANGE_BASE, CHANGE_BASE_DOC, TRANSFORMATIONS
from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.check.qiec_checks import Staged
from qvr_core.check.qiec_types import written
from qvr_core.check.types import Arrow, Product, Seq, dims_text
from qvr_core.ide.builtins_info import family_text
from qvr_core.syntax.layout import LogicalLine, Token, split
from qvr_core.text.span import unify_line_ends


@dataclass(frozen=True)
class Signature:
    """A signature label and its parameters as [start, end) offsets into the label."""

    label: str
    parameters: tuple[tuple[int, int], ...]
    doc: str = ""
    parameter_docs: tuple[str, ...] = ()


@dataclass(frozen=True)
class SignatureHelp:
    signature: Signature
    active_parameter: int


@dataclass(frozen=True)
class CallSite:
    """The innermost unclosed call before the cursor."""

    callee: str
    index: int  # positional index of the argument the cursor is in
    keyword: str | None  # `reverse` when the cursor is after `reverse=`
    in_program: bool


def signature_help(text: str, offset: int, module: CheckedModule | None) -> SignatureHelp | None:
    """The signature of the call around `offset` in `text`, if the callee is known."""
    site = call_site(text, offset)
    if site is None:
        return None
    signature = _signature(site, module)
    if signature is None:
        return None
    return SignatureHelp(signature, _active(site, signature))


@dataclass
class _Frame:
    """An open bracket while scanning: its callee (None for grouping) and argument position."""

    callee: str | None
    index: int = 0
    keyword: str | None = None
    tokens_in_arg: int = 0


def call_site(text: str, offset: int) -> CallSite | None:
    """The innermost open `NAME(` before `offset` on the logical line holding it."""
    line = _last_line(unify_line_ends(text[: max(0, min(offset, len(text)))]))
    if line is None:
        return None
    frames: list[_Frame] = []
    previous: Token | None = None
    statics: list[str | None] = []  # the name before each open `[` (`f[S](`: f's statics)
    closed: str | None = None  # the name before the `[...]` just closed
    for tok in line.tokens:
        if tok.type in ("LPAR", "LSQB"):
            named = previous is not None and previous.type == "NAME"
            name = previous.text if named and previous is not None else None
            if tok.type == "LSQB":
                statics.append(name)
                name = None
            elif previous is not None and previous.type == "RSQB":
                name = closed  # `interpret[Answered](`: a call of interpret
            frames.append(_Frame(name))
        elif tok.type in ("RPAR", "RSQB"):
            if tok.type == "RSQB":
                closed = statics.pop() if statics else None
            if frames:
                frames.pop()
        elif frames and tok.type == "COMMA":
            frames[-1] = _Frame(frames[-1].callee, frames[-1].index + 1)
        elif frames:
            frame = frames[-1]
            if tok.type == "EQUAL" and frame.tokens_in_arg == 1 and previous is not None:
                frame.keyword = previous.text  # `reverse=` starts this argument
            frame.tokens_in_arg += 1
        previous = tok
    calls = [f for f in frames if f.callee is not None]
    if not calls:
        return None
    first = line.tokens[0]
    in_program = first.type in ("SAMPLE", "OBSERVE", "RETURN") or (
        line.indent > 0 and (first.type == "LET" or first.text in ("marginalize", "score"))
    )
    call = calls[-1]
    return CallSite(call.callee, call.index, call.keyword, in_program)  # type: ignore[arg-type]  # calls: frames with a callee


def _last_line(prefix: str) -> LogicalLine | None:
    layout = split(prefix)
    if not layout.chunks:
        return None
    chunk = layout.chunks[-1]
    line = chunk.body[-1] if chunk.body else chunk.head
    last_newline = prefix.rfind("\n")
    # A logical line ends at a newline unless a bracket is still open.
    if line.depth == 0 and line.tokens[-1].end <= last_newline:
        return None
    return line


def _signature(site: CallSite, module: CheckedModule | None) -> Signature | None:
    name = site.callee
    if name in COMBINATORS:
        return _combinator(site)
    declared = module is not None and module.symbols.lookup(name) is not None
    if name == PARSER and not site.in_program and not declared:
        params = tuple(f"{k}=" for k in PARSER_KEYWORDS)
        return _build(PARSER, params, " : [T] -> Real", PARSER_DOC, tuple(PARSER_KEYWORDS.values()))
    transformation = TRANSFORMATIONS.get(name)
    outside = not site.in_program and not declared  # a top-level let, no name of the file
    if transformation is not None and transformation.constructor and outside:
        what = "an object" if transformation.takes == "axis" else "a morphism"
        takes = (f"{transformation.takes}: {what}",)  # `softmax(B)`: the axis's object
        return _build(name, (transformation.takes,), "", transformation.describe(), takes)
    if name == CHANGE_BASE and outside:
        return _build(
            f"f.{CHANGE_BASE}",
            ("phi",),
            "",
            CHANGE_BASE_DOC,
            ("a transformation, a define bound to one, or several chained with >>>",),
        )
    if site.in_program and name in FUNCTIONS:
        fn = FUNCTIONS[name]
        return _build(name, fn.params, "", fn.doc)
    if site.in_program and name in LIFTED:  # map, fold
        lifted = LIFTED[name]
        return _build(name, lifted.params, "", lifted.doc)
    if site.in_program and name in FAMILIES and not declared:
        return _family(FAMILIES[name], site)
    record = module.qiec.get(name) if module is not None else None
    if isinstance(record, Staged):  # a QIEC computation, in a program or another's body
        header = record.header
        params = tuple(f"{n} : {written(t)}" for n, t in header.params)
        return _build(name, params, f" : {written(header.result)}", record.summary())
    function = COMPUTATION_FUNCTIONS.get(name)
    if function is not None and not declared:
        return _build(name, function.params, "", function.doc)
    if module is None or not site.in_program:
        return None
    return _applied(name, module)


def _combinator(site: CallSite) -> Signature:
    k = COMBINATORS[site.callee]
    docs = tuple(p.doc for p in k.params)
    if k.variadic:  # one parameter per branch typed so far, at least two
        count = max(2, site.index + 1)
        params = tuple(f"{k.params[0].name}{i}" for i in range(1, count + 1))
        cods = " * ".join(f"C{i}" for i in range(1, count + 1))
        return _build(k.name, params, f" : D -> {cods}", k.doc, docs * count)
    params = tuple(p.name for p in k.params)
    params += tuple(f"{key}={default}" for key, _, default in k.keywords)
    docs += tuple(f"{' or '.join(values)}" for _, values, _ in k.keywords)
    return _build(k.name, params, k.result, k.doc, docs)


def _family(family: Family, site: CallSite) -> Signature:
    """A family call in a program step: the schema that names the keyword being typed."""
    schema = family.params
    if site.keyword is not None:
        schema = next((s for s in family.schemas if any(p.name == site.keyword for p in s)), schema)
    params = tuple(p.name for p in schema)
    docs = tuple(
        f"{p.constraint.describe()}: {p.doc}" if p.doc else p.constraint.describe() for p in schema
    )
    return _build(family.name, params, "", family_text(family), docs)


def _applied(callee: str, module: CheckedModule) -> Signature | None:
    """A morphism, let or program applied to named values: one parameter per written factor."""
    symbol = module.symbols.lookup(callee)
    if symbol is None or not isinstance(symbol.type, Arrow):
        return None
    arrow = symbol.type
    program = module.programs.get(callee) if symbol.kind is SymbolKind.PROGRAM else None
    if program is not None and program.params:
        params = tuple(f"{n}: {t.label}" for n, t in program.params)
    elif isinstance(arrow.dom, Product):
        params = arrow.dom.written
    else:
        params = (arrow.dom.label,)
    dims = dims_text(arrow.dom.elem if isinstance(arrow.dom, Seq) else arrow.dom)
    doc = f"The arguments, side by side, must make {arrow.dom.label} ({dims})."
    if symbol.doc:
        doc = f"{symbol.doc}\n\n{doc}"
    return _build(callee, params, f" -> {arrow.cod.label}", doc)


def _build(
    name: str, params: tuple[str, ...], tail: str, doc: str, param_docs: tuple[str, ...] = ()
) -> Signature:
    label = f"{name}("
    offsets: list[tuple[int, int]] = []
    for i, p in enumerate(params):
        if i:
            label += ", "
        offsets.append((len(label), len(label) + len(p)))
        label += p
    label += ")" + tail
    return Signature(label, tuple(offsets), doc, param_docs)


def _active(site: CallSite, signature: Signature) -> int:
    if site.keyword is not None:
        label = signature.label
        for i, (s, e) in enumerate(signature.parameters):
            if label[s:e] == site.keyword or label[s:e].startswith(site.keyword + "="):
                return i
    return min(site.index, max(0, len(signature.parameters) - 1))
