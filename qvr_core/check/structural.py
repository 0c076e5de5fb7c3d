"""quivers' structural compression: `signature`, `encoder`, `decoder` and `loss`.

A `signature` declares a many-sorted term algebra (sorts, constructors, binders, or the
vertex and edge kinds of a graph), an `encoder` folds its terms into vectors, a
`decoder` expands a vector back into a term under a learned distribution, and a `loss`
is a weighted term of a training objective attached to one of them (quivers 0.25.2,
`dsl/compiler/structural.py` and `structural/`). The checker reads each declaration as
that compiler does and reports what it refuses where it is written:

- a signature: a sort, vertex or edge kind, constructor or binder declared twice, a
  constructor or binder named `BoundVar` or `Data` (the framework's own), a sort a
  constructor or binder uses that the `sorts` section does not declare, an edge
  between undeclared vertex kinds, `vocab=` on a sort that is not `data`, a vocabulary
  entry twice (QVR102, QVR101, QVR304);
- an encoder or decoder: a signature that is not declared (QVR101); a sort with no
  `dim` on the signature and none on the block (QVR304); an option other than
  `factory` (an encoder: then one of quivers' factories) or `depth` (a decoder; a whole
  number) (QVR303, QVR304); an `op` rule for an operator the signature lacks or with
  another number of arguments (QVR101, QVR724); a `var_init ... from A` without
  `as name` (QVR304); a name its bodies use that is neither bound there nor declared;
  a name another morphism has;
- a loss: an option other than `weight`, `on`, `global`; a weight that is not a number;
  `on=` other than `program(P)`, `deduction(D)`, `encoder(E)`, `decoder(D)`,
  `rule(R, D)` or `chart(D)` (QVR303, QVR304). A target the file does not declare is
  a loss quivers registers and never evaluates (QVR802). The names of the body that
  the file does not declare are the training environment's (`term`, `log_prob_sum`),
  which the caller gives when the loss is evaluated.

Hover on a declaration says what it is (a signature's sorts with their dimensions and
its operators, an encoder's and a decoder's dimensions). qvr checks these declarations;
it does not build the networks (`docs/language.md`, "Structural compression").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

from qvr_core.builtins.structural import (
    DECODER_OPTIONS,
    DEFAULT_DECODER_DEPTH,
    ENCODER_FACTORIES,
    ENCODER_OPTIONS,
    LOSS_ATTACHMENTS,
    LOSS_OPTIONS,
    RESERVED_OPERATORS,
    SORT_KINDS,
)
from qvr_core.check.context import SymbolKey
from qvr_core.check.unchecked import names_in
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Rule
from qvr_core.text.span import Span

if TYPE_CHECKING:
    from qvr_core.check.context import Context

KINDS = ("signature", "encoder", "decoder", "loss")
#: How a signature's reading reports (or, read for an encoder, does not).
_Say = Callable[[Rule, str, Span], None]


def is_structural(decl: ast.Decl) -> TypeGuard[ast.OtherDecl]:
    return isinstance(decl, ast.OtherDecl) and decl.clause.kind in KINDS


@dataclass(frozen=True)
class Sort:
    name: str
    kind: str  # "object" | "index" | "data"
    dim: int | None
    vocab: tuple[str | int | float, ...] = ()


@dataclass
class Signature:
    """A checked signature: its sorts and vertex kinds, its operators' argument sorts
    (a binder's: its annotations' sorts, then its scoped arguments') and results."""

    name: str
    sorts: dict[str, Sort] = field(default_factory=dict)
    operators: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    binders: set[str] = field(default_factory=set)
    vertex_kinds: dict[str, Sort] = field(default_factory=dict)
    edge_kinds: dict[str, tuple[str, str]] = field(default_factory=dict)

    def dim(self, sort: str) -> int | None:
        found = self.sorts.get(sort) or self.vertex_kinds.get(sort)
        return found.dim if found is not None else None

    def describe(self) -> str:
        sorts = ", ".join(
            f"{s.name} ({s.kind}{f', dim {s.dim}' if s.dim is not None else ''})"
            for s in (*self.sorts.values(), *self.vertex_kinds.values())
        )
        ops = ", ".join(
            f"{op} : {', '.join(dom) or '()'} -> {cod}" for op, (dom, cod) in self.operators.items()
        )
        return f"sorts {sorts}" + (f"; operators {ops}" if ops else "")


@dataclass(frozen=True)
class StructuralType:
    """The hover type of a structural declaration: what it is, in words."""

    label: str


def check_structural(ctx: Context, decl: ast.OtherDecl) -> None:
    kind = decl.clause.kind
    if kind == "signature":
        sig = read_signature(ctx, decl, report=True)
        ctx.record_type(decl.name.span, StructuralType(f"signature {sig.name}"), sig.describe())
    elif kind in ("encoder", "decoder"):
        _coder(ctx, decl)
    else:
        _loss(ctx, decl)


# ---------------------------------------------------------------- signatures


def read_signature(ctx: Context, decl: ast.OtherDecl, report: bool = False) -> Signature:
    """A signature's record; with `report`, what quivers refuses is reported too."""
    sig = Signature(decl.name.text)

    def say(rule: Rule, message: str, span: Span) -> None:
        if report:
            ctx.report(rule, f"signature {sig.name}: {message}", span)

    sections = list(decl.clause.body)
    entries = [e for s in sections for e in s.body]
    for e in entries:
        if e.kind == "sort_decl":
            _sort(sig, e, say, vertex=_section_of(sections, e) == "vertex_kinds")
    for e in entries:
        if e.kind == "edge_kind" or (
            e.kind == "constructor_decl" and _section_of(sections, e) == "edge_kinds"
        ):
            _edge(sig, e, say)
        elif e.kind == "constructor_decl":
            _constructor(sig, e, say)
        elif e.kind == "binder_decl":
            _binder(sig, e, say)
    return sig


def _section_of(sections: list[ast.Clause], entry: ast.Clause) -> str:
    for s in sections:
        if any(e is entry for e in s.body):
            return s.keyword.text if s.keyword is not None else ""
    return ""


def _sort(sig: Signature, e: ast.Clause, say: _Say, vertex: bool) -> None:
    name = e.names[0]
    words = [p.text for p in e.parts[1:] if isinstance(p, ast.Name)]
    kind = words[0] if words else "object"
    options = {o.key.text: o for o in e.parts if isinstance(o, ast.Option)}
    table = sig.vertex_kinds if vertex else sig.sorts
    what = "vertex_kind" if vertex else "sort"
    if name.text in table:
        say(rules.DUPLICATE_DECLARATION, f"duplicate {what} {name.text}", name.span)
        return
    if kind not in SORT_KINDS:
        say(
            rules.INVALID_OPTION_VALUE,
            f"{what} {name.text} is of kind {kind}: a sort is {', '.join(SORT_KINDS)}",
            name.span,
        )
    dim: int | None = None
    if "dim" in options:
        v = options["dim"].value
        if isinstance(v, ast.Literal) and v.kind == "int" and int(v.value) > 0:
            dim = int(v.value)
        else:
            say(
                rules.INVALID_OPTION_VALUE,
                f"{name.text}'s dim is a whole number > 0",
                options["dim"].span,
            )
    vocab: list[str | int | float] = []
    if "vocab" in options:
        o = options["vocab"]
        v = o.value
        if kind != "data":
            say(
                rules.INVALID_OPTION_VALUE,
                f"vocab is only valid on data sorts; {name.text} is of kind {kind}",
                o.span,
            )
        items = v.items if isinstance(v, ast.ValueList) else ()
        if not isinstance(v, ast.ValueList):
            say(rules.INVALID_OPTION_VALUE, f"{name.text}'s vocab is a list", o.span)
        for item in items:
            if item.kind not in ("string", "int", "float"):
                say(
                    rules.INVALID_OPTION_VALUE,
                    f"{name.text}'s vocab entries are string, integer or float literals, "
                    f"not {item.raw}",
                    item.span,
                )
            elif item.value in vocab:
                say(
                    rules.DUPLICATE_DECLARATION,
                    f"sort {name.text}'s vocabulary has {item.raw} twice",
                    item.span,
                )
            else:
                assert isinstance(item.value, str | int | float)
                vocab.append(item.value)
    table[name.text] = Sort(name.text, kind, dim, tuple(vocab))


def _constructor(sig: Signature, e: ast.Clause, say: _Say) -> None:
    name, *sorts = [p for p in e.parts if isinstance(p, ast.Name)]
    if not sorts:
        return
    *domain, codomain = sorts
    if not _fresh(sig, name, say, "constructor"):
        return
    ok = True
    for s in domain:
        if s.text not in sig.sorts:
            say(
                rules.UNDEFINED_NAME,
                f"constructor {name.text} uses the undeclared sort {s.text}: declare it in "
                "the sorts section",
                s.span,
            )
            ok = False
    if codomain.text not in sig.sorts:
        say(
            rules.UNDEFINED_NAME,
            f"constructor {name.text} has the unknown result sort {codomain.text}",
            codomain.span,
        )
        ok = False
    if ok:
        sig.operators[name.text] = (tuple(s.text for s in domain), codomain.text)


def _binder(sig: Signature, e: ast.Clause, say: _Say) -> None:
    name = e.names[0]
    if not _fresh(sig, name, say, "binder"):
        return
    annotations: list[str] = []
    scoped: list[str] = []
    ok = True
    for part in e.parts:
        if isinstance(part, ast.Clause) and part.kind == "bind_var":
            names = [n for n in part.parts if isinstance(n, ast.Name)]
            sorts = names[1::2]  # x : Term (: ty : Type)
            for s in sorts:
                ok &= _declared_sort(sig, name, s, say)
            if len(sorts) == 2:
                annotations.append(sorts[1].text)
        elif isinstance(part, ast.Clause) and part.kind == "scoped_arg":
            arg_sort = part.parts[1]
            assert isinstance(arg_sort, ast.Name)
            ok &= _declared_sort(sig, name, arg_sort, say)
            scoped.append(arg_sort.text)
    result = e.parts[-1]
    assert isinstance(result, ast.Name)
    ok &= _declared_sort(sig, name, result, say)
    if ok:
        sig.operators[name.text] = ((*annotations, *scoped), result.text)
        sig.binders.add(name.text)


def _declared_sort(sig: Signature, op: ast.Name, s: ast.Name, say: _Say) -> bool:
    if s.text in sig.sorts:
        return True
    say(rules.UNDEFINED_NAME, f"binder {op.text} uses the undeclared sort {s.text}", s.span)
    return False


def _fresh(sig: Signature, name: ast.Name, say: _Say, what: str) -> bool:
    if name.text in RESERVED_OPERATORS:
        say(
            rules.DUPLICATE_DECLARATION,
            f"{what} name {name.text} is the framework's own ({', '.join(RESERVED_OPERATORS)})",
            name.span,
        )
        return False
    if name.text in sig.operators:
        say(rules.DUPLICATE_DECLARATION, f"duplicate {what} {name.text}", name.span)
        return False
    return True


def _edge(sig: Signature, e: ast.Clause, say: _Say) -> None:
    names = [p for p in e.parts if isinstance(p, ast.Name)]
    if len(names) != 3:
        return
    name, src, tgt = names
    if name.text in sig.edge_kinds:
        say(rules.DUPLICATE_DECLARATION, f"duplicate edge_kind {name.text}", name.span)
        return
    for end in (src, tgt):
        if end.text not in sig.vertex_kinds:
            say(
                rules.UNDEFINED_NAME,
                f"edge_kind {name.text} names the unknown vertex_kind {end.text}",
                end.span,
            )
            return
    sig.edge_kinds[name.text] = (src.text, tgt.text)


# ---------------------------------------------------------------- encoders, decoders


def _coder(ctx: Context, decl: ast.OtherDecl) -> None:
    kind = decl.clause.kind
    name = decl.name.text
    names = [p for p in decl.clause.parts if isinstance(p, ast.Name)]
    sig_name = names[1] if len(names) > 1 else None
    options = [o for o in decl.clause.parts if isinstance(o, ast.Option)]
    if sig_name is None:
        return
    target = ctx.top.get(sig_name.text)
    if not (isinstance(target, ast.OtherDecl) and target.clause.kind == "signature"):
        signatures = [
            n
            for n, d in ctx.top.items()
            if isinstance(d, ast.OtherDecl) and d.clause.kind == "signature"
        ]
        ctx.undefined(sig_name, "signature", signatures)
        _bodies(ctx, decl)
        return
    ctx.ref(sig_name.span, SymbolKey(sig_name.text))
    sig = read_signature(ctx, target)
    factory = _coder_options(ctx, decl, kind, options)
    body = list(decl.clause.body)
    overrides = {}
    for c in body:
        if c.kind == "dim":
            s, size = c.parts[0], c.parts[1]
            assert isinstance(s, ast.Name) and isinstance(size, ast.Literal)
            overrides[s.text] = int(size.value)
    dims: dict[str, int] = {}
    if factory is None:
        for s in (*sig.sorts, *(sig.vertex_kinds if kind == "encoder" else ())):
            d = overrides.get(s, sig.dim(s))
            if d is None:
                ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"{kind} {name}: sort {s} has no dim: give it one on the signature "
                    f"(`{s} : object [dim=64]`) or here (`dim {s} = 64`)",
                    decl.name.span,
                )
            else:
                dims[s] = d
    if kind == "encoder":
        _encoder_rules(ctx, name, sig, body)
    _bodies(ctx, decl)
    shown = ", ".join(f"{s} {d}" for s, d in dims.items())
    what = "folds terms of" if kind == "encoder" else "expands codes into terms of"
    note = f"{what} {sig.name}" + (f"; dimensions {shown}" if shown else "")
    if factory is not None:
        note += f"; built by quivers' {factory}"
    if kind == "decoder":
        depth = next((o for o in options if o.key.text == "depth"), None)
        written = depth.value if depth is not None else None
        note += (
            f"; depth {written.raw if isinstance(written, ast.Literal) else DEFAULT_DECODER_DEPTH}"
        )
    ctx.record_type(decl.name.span, StructuralType(f"{kind} {name} : {sig.name}"), note)


def _coder_options(
    ctx: Context, decl: ast.OtherDecl, kind: str, options: list[ast.Option]
) -> str | None:
    """Check an encoder's or decoder's options; the encoder's factory, if it names one."""
    factory = (
        next((o for o in options if o.key.text == "factory"), None) if kind == "encoder" else None
    )
    if factory is not None:
        word = factory.value.raw if isinstance(factory.value, ast.Literal) else ""
        if word not in ENCODER_FACTORIES:
            ctx.did_you_mean(
                rules.INVALID_OPTION_VALUE,
                f"encoder {decl.name.text}: unknown factory {word or ctx.source(factory.span)} "
                f"(quivers' factories: {', '.join(ENCODER_FACTORIES)})",
                factory.span,
                word,
                list(ENCODER_FACTORIES),
            )
            return None
        accepted = ENCODER_FACTORIES[word]
        for o in options:
            if o is not factory and o.key.text not in accepted:
                ctx.report(
                    rules.UNKNOWN_OPTION,
                    f"encoder {decl.name.text}: factory {word} does not accept {o.key.text} "
                    f"(it takes {', '.join(accepted)})",
                    o.key.span,
                )
        return word
    allowed = ENCODER_OPTIONS if kind == "encoder" else DECODER_OPTIONS
    for o in options:
        if o.key.text not in allowed:
            ctx.unknown_option(o.key, f"{kind} {decl.name.text}", allowed)
        elif o.key.text == "depth" and not (
            isinstance(o.value, ast.Literal) and o.value.kind == "int" and int(o.value.value) > 0
        ):
            ctx.report(
                rules.INVALID_OPTION_VALUE,
                f"decoder {decl.name.text}'s depth is a whole number > 0",
                o.span,
            )
    return None


def _encoder_rules(ctx: Context, name: str, sig: Signature, body: list[ast.Clause]) -> None:
    for c in body:
        if c.kind == "op_rule":
            op = c.parts[0]
            assert isinstance(op, ast.Name)
            args = [p for p in c.parts[1:-1] if isinstance(p, ast.Name)]
            if c.parts[1:2] and isinstance(c.parts[1], ast.Clause):  # `recurrent state`
                args = []
            found = sig.operators.get(op.text)
            if found is None:
                ctx.did_you_mean(
                    rules.UNDEFINED_NAME,
                    f"encoder {name}: op {op.text} is not an operator of signature {sig.name}",
                    op.span,
                    op.text,
                    list(sig.operators),
                )
            elif args and len(args) != len(found[0]):
                ctx.report(
                    rules.ARGUMENT_COUNT,
                    f"encoder {name}: op {op.text} takes {len(found[0])} arguments "
                    f"({', '.join(found[0])}), not {len(args)}",
                    op.span,
                )
        elif c.kind == "var_init":
            words = [p for p in c.parts[:-1] if isinstance(p, ast.Name)]
            for s in words[:2]:
                if s.text not in sig.sorts:
                    ctx.undefined(s, f"sort of signature {sig.name}", list(sig.sorts))
            if len(words) == 2:
                ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"encoder {name}: var_init {words[0].text} from {words[1].text} needs "
                    f"`as NAME` to bind the annotation's embedding in its body",
                    words[1].span,
                )


def _bodies(ctx: Context, decl: ast.OtherDecl) -> None:
    """The names a block's rule bodies use: each bound by its rule or declared."""
    for c in decl.clause.body:
        if c.kind in ("dim", "section"):
            continue
        bodies = [
            p
            for p in c.parts
            if not isinstance(p, ast.Name | ast.Clause | ast.Literal | ast.Option)
        ]
        bound = {p.text for p in c.parts if isinstance(p, ast.Name)}
        for part in c.parts:
            if isinstance(part, ast.Clause):  # `recurrent state`, `attention prefix`
                bound |= {n.text for n in part.parts if isinstance(n, ast.Name)}
        bound |= _FRAMEWORK_NAMES.get(c.kind, frozenset())
        for b in bodies:
            _uses(ctx, b, bound, environment=False)


#: Names the framework binds in a rule's body besides those the rule writes.
_FRAMEWORK_NAMES = {
    "decoder_rule": frozenset({"n", "embeds"}),  # a factor's arity, binder_select's scope
    "readout": frozenset({"embeds"}),
    "op_rule": frozenset({"ctx"}),
}


def _uses(ctx: Context, body: object, bound: set[str], environment: bool) -> None:
    """Each name a let-expression body uses: bound, a declaration (a use of it), or (in a
    loss, `environment`) a name the training environment gives; else undefined."""
    calls = {id(n) for n in _callees(body)}
    for n in names_in(body):
        text = n.text
        if text in bound:
            continue
        if text in ctx.top:
            ctx.ref(n.span, SymbolKey(text))
        elif id(n) in calls or environment:
            continue  # quivers' builtins (`relu`), or the environment's names
        else:
            ctx.undefined(n, "name", [*bound, *ctx.top])


def _callees(node: object) -> Iterable[ast.Name]:
    """The function and method names of a body (not values)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Apply):
            yield item.func
            stack.extend(item.args)
        elif isinstance(item, ast.MethodCall):
            yield item.method
            stack.append(item.receiver)
            stack.extend(item.args)
        elif isinstance(item, ast.Lambda):
            yield item.param  # bound by the lambda
            stack.append(item.body)
        elif isinstance(item, tuple):
            stack.extend(item)
        elif hasattr(item, "__dataclass_fields__") and type(item) is not Span:
            stack.extend(getattr(item, f) for f in item.__dataclass_fields__)


# ---------------------------------------------------------------- losses


def _loss(ctx: Context, decl: ast.OtherDecl) -> None:
    name = decl.name.text
    options = [o for o in decl.clause.parts if isinstance(o, ast.Option)]
    attached = "globally"
    for o in options:
        key = o.key.text
        if key not in LOSS_OPTIONS:
            ctx.unknown_option(o.key, f"loss {name}", LOSS_OPTIONS)
        elif key == "weight" and not (
            isinstance(o.value, ast.Literal) and o.value.kind in ("int", "float")
        ):
            ctx.report(rules.INVALID_OPTION_VALUE, f"loss {name}'s weight is a number", o.span)
        elif key == "on":
            attached = _attachment(ctx, name, o) or attached
    for c in decl.clause.body:
        _uses(ctx, c.parts, set(), environment=True)
    ctx.record_type(
        decl.name.span,
        StructuralType(f"loss {name}"),
        f"a weighted training term attached {attached}; the names its body reads that the "
        "file does not declare come from the training environment",
    )


def _attachment(ctx: Context, name: str, o: ast.Option) -> str | None:
    v = o.value
    if not isinstance(v, ast.ValueCall) or v.func.text not in LOSS_ATTACHMENTS:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"loss {name}: on= is one of {', '.join(f'{k}(...)' for k in LOSS_ATTACHMENTS)}",
            o.span,
        )
        return None
    kind = v.func.text
    want = LOSS_ATTACHMENTS[kind]
    words = [a.raw for a in v.args if a.kind == "name"]
    if len(words) != len(want) or len(v.args) != len(want):
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"loss {name}: on={kind}(...) takes {' and '.join(want)}",
            v.span,
        )
        return None
    for word, arg, what in zip(words, v.args, want, strict=True):
        target = ctx.top.get(word)
        if target is None:
            ctx.did_you_mean(
                rules.GRAMMAR_READ_OTHERWISE,
                f"loss {name} is attached to {what} {word}, which the file does not declare: "
                "quivers registers it and never evaluates it",
                arg.span,
                word,
                list(ctx.top),
            )
        else:
            ctx.ref(arg.span, SymbolKey(word))
    return f"to {kind} {words[0]}"
