"""Objects, type references and morphism declarations (roles, options, families)."""

from __future__ import annotations

import dataclasses

from qvr_core import rules
from qvr_core.builtins.families import FAMILIES as FAMILY_TABLE
from qvr_core.builtins.families import codomain_words, family_for
from qvr_core.builtins.objects import UNTYPED_CONSTRUCTORS
from qvr_core.builtins.param_sources import LINEAR, MLP
from qvr_core.builtins.param_sources import PARAM_SOURCES as SOURCES
from qvr_core.check.context import (
    FAMILIES,
    KERNEL_FAMILIES,
    OPTION_KEYS,
    PARAM_SOURCES,
    ROLES,
    Context,
    SymbolKey,
    suggest,
)
from qvr_core.check.module import MorphismInfo
from qvr_core.check.types import CONSTRUCTORS, Arrow, ObjectType, Product, dims_text
from qvr_core.check.unchecked import note, refer
from qvr_core.diagnostics import Fix, Related, TextEdit
from qvr_core.syntax import ast
from qvr_core.syntax.span import Span

# ------------------------------------------------------------------ objects


#: quivers' object constructors that qvr does not type yet (its own are CONSTRUCTORS).
OTHER_CONSTRUCTORS = frozenset(UNTYPED_CONSTRUCTORS)


def check_objects(ctx: Context, decls: list[ast.ObjectDecl]) -> None:
    """Base objects first, then aliases (which may refer to aliases, in any order)."""
    one_each: list[ast.ObjectDecl] = []
    for d in decls:
        if d.more_names:  # `object A, B : Real 3`: each name its own object
            one_each += [dataclasses.replace(d, name=n, more_names=()) for n in d.names]
        else:
            one_each.append(d)
    decls = []
    for d in one_each:
        ctx.object_decls.setdefault(d.name.text, d)
        body = d.body
        if not isinstance(body, ast.SizedObject | ast.TypeRef) or (
            isinstance(body, ast.SizedObject) and body.constructor.text in OTHER_CONSTRUCTORS
        ):
            refer(ctx, body)
            note(ctx, d.name.span, f"object {d.name.text}")
        else:
            decls.append(d)
    for d in decls:
        if isinstance(d.body, ast.SizedObject):
            _base_object(ctx, d, d.body)
    pending = {d.name.text: d for d in decls if isinstance(d.body, ast.TypeRef)}
    for name in list(pending):
        _alias(ctx, name, pending, ())


def _base_object(ctx: Context, decl: ast.ObjectDecl, body: ast.SizedObject) -> None:
    ctor = body.constructor
    kind = CONSTRUCTORS.get(ctor.text)
    if kind is None:
        ctx.undefined(ctor, "type constructor", list(CONSTRUCTORS))
        return
    if body.size is None:
        return
    if kind == "simplex" and body.size < 2:
        ctx.report(
            rules.SIMPLEX_TOO_SMALL,
            f"Simplex {body.size} has no room for a probability vector: use at least 2",
            body.size_span or body.span,
        )
    ctx.objects[decl.name.text] = ObjectType(decl.name.text, kind, body.size)
    ctx.record_type(decl.name.span, ctx.objects[decl.name.text])


def _alias(
    ctx: Context, name: str, pending: dict[str, ast.ObjectDecl], stack: tuple[str, ...]
) -> Product | None:
    if name in ctx.aliases:
        return ctx.aliases[name]
    decl = pending.get(name)
    if decl is None:
        return None
    if name in stack:
        ctx.report(
            rules.CYCLIC_DEFINITION,
            f"object {name} is defined in terms of itself ({' -> '.join((*stack, name))})",
            decl.name.span,
        )
        return None
    body = decl.body
    assert isinstance(body, ast.TypeRef)
    factors: list[ObjectType] = []
    ok = True
    for f in body.factors:
        if f.text in pending and f.text not in ctx.aliases:
            sub = _alias(ctx, f.text, pending, (*stack, name))
            ctx.ref(f.span, SymbolKey(f.text))
            if sub is None:
                ok = False
            else:
                factors.extend(sub.factors)
            continue
        p = resolve_type(ctx, ast.TypeRef((f,), f.span))
        if p is None:
            ok = False
        else:
            factors.extend(p.factors)
    if not ok:
        return None
    product = Product(tuple(factors), tuple(f.text for f in body.factors))
    ctx.aliases[name] = product
    ctx.record_type(decl.name.span, product)
    return product


def resolve_type(ctx: Context, ref: ast.ObjectExpr | None) -> Product | None:
    """A written product of object names -> its flattened Product (None after an error,
    or for an object expression the checker does not type yet: its names are recorded)."""
    if type(ref) is not ast.TypeRef:
        refer(ctx, ref)
        return None
    factors: list[ObjectType] = []
    ok = True
    for f in ref.factors:
        if f.text in ctx.objects:
            factors.append(ctx.objects[f.text])
        elif f.text in ctx.aliases:
            factors.extend(ctx.aliases[f.text].factors)
        else:
            ok = False
            if f.text in ctx.object_decls:
                ctx.ref(f.span, SymbolKey(f.text))
                continue  # declared but broken: already reported there
            decl = ctx.top.get(f.text)
            if decl is not None:
                kind = type(decl).__name__.removesuffix("Decl").lower()
                ctx.report(rules.WRONG_KIND, f"'{f.text}' is a {kind}, not an object", f.span)
            else:
                ctx.undefined(f, "object", list(ctx.object_decls))
            continue
        ctx.ref(f.span, SymbolKey(f.text))
    if not ok or not factors:
        return None
    product = Product(tuple(factors), tuple(f.text for f in ref.factors))
    ctx.record_type(ref.span, product)
    return product


# ---------------------------------------------------------------- morphisms


def unchecked_morphism(decl: ast.MorphismDecl) -> str | None:
    """What in a morphism declaration the checker does not type yet, if anything."""
    if type(decl.dom) is not ast.TypeRef or type(decl.cod) is not ast.TypeRef:
        return "its domain or codomain"
    if decl.init is not None or decl.family_args is not None:
        return "its initialiser"
    family = decl.family.text if decl.family else None
    if family is not None and family not in FAMILIES and not suggest(family, FAMILIES):
        return f"family {family}"
    for o in decl.options:
        if o.key.text not in OPTION_KEYS and not suggest(o.key.text, OPTION_KEYS):
            return f"option {o.key.text}"
        if type(o.value) is not ast.Literal or o.value.kind == "string":
            return f"option {o.key.text}"
    return None


def check_morphism(ctx: Context, decl: ast.MorphismDecl) -> MorphismInfo | None:
    reason = unchecked_morphism(decl)
    if reason is not None:
        refer(ctx, (decl.dom, decl.cod, decl.options, decl.family_args, decl.init))
        note(ctx, decl.name.span, f"morphism {decl.name.text} ({reason})")
        return None
    dom = resolve_type(ctx, decl.dom)
    cod = resolve_type(ctx, decl.cod)
    opts = _options(ctx, decl)
    role = opts.get("role")
    family = decl.family.text if decl.family else None
    if decl.family is not None and family not in FAMILIES:
        ctx.undefined(decl.family, "family", KERNEL_FAMILIES)
        family = None
    if "role" not in opts and family is not None:
        role = "kernel"  # quivers: `~ Family` makes a stochastic kernel; the block is optional
    elif "role" not in opts and not _role_was_bad(ctx, decl):
        _missing_role(ctx, decl, dom, cod)
    if dom is None or cod is None:
        return None
    arrow = Arrow(dom, cod)
    if role is not None:
        _check_role(ctx, decl, str(role), family, dom, cod, opts)
    scale = opts.get("scale")
    rank = opts.get("rank")
    replicate = opts.get("replicate")
    return MorphismInfo(
        name=decl.name.text,
        decl=decl,
        type=arrow,
        role=str(role) if role is not None else None,
        family=family,
        scale=float(scale) if isinstance(scale, int | float) else None,
        replicate=int(replicate) if isinstance(replicate, int) else None,
        param_source=str(opts.get("param_source", "mlp")),
        hidden_dim=int(opts.get("hidden_dim", 64)),  # type: ignore[call-overload]  # _options kept an int
        rank=int(rank) if isinstance(rank, int) else None,
    )


def _role_was_bad(ctx: Context, decl: ast.MorphismDecl) -> bool:
    return any(o.key.text == "role" for o in decl.options)


def _options(ctx: Context, decl: ast.MorphismDecl) -> dict[str, object]:
    """Validate option keys and value types; keep the valid ones."""
    out: dict[str, object] = {}
    seen: dict[str, ast.Option] = {}
    for o in decl.options:
        key = o.key.text
        if key in seen:
            ctx.report(
                rules.DUPLICATE_OPTION,
                f"option '{key}' is given twice in morphism {decl.name.text}",
                o.span,
                related=(Related(seen[key].span, "first given here"),),
                fixes=(
                    Fix(
                        f"Remove the second '{key}'", (TextEdit(_option_removal(ctx, decl, o), ""),)
                    ),
                ),
            )
            continue
        seen[key] = o
        if key not in OPTION_KEYS:
            ctx.did_you_mean(
                rules.UNKNOWN_OPTION,
                f"unknown option '{key}' on morphism {decl.name.text}",
                o.key.span,
                key,
                OPTION_KEYS,
                otherwise=f" (options are {', '.join(OPTION_KEYS)})",
            )
            continue
        value = _option_value(ctx, decl, o)
        if value is not None:
            out[key] = value
    return out


def _option_removal(ctx: Context, decl: ast.MorphismDecl, o: ast.Option) -> Span:
    """The span of `, key=value` so removing it leaves a well-formed block."""
    start = o.span.start
    text = ctx.text
    j = start - 1
    while j > 0 and text[j] in " \t":
        j -= 1
    if text[j] == ",":
        start = j
    return ctx.lines.span(start, o.span.end)


def _option_value(ctx: Context, decl: ast.MorphismDecl, o: ast.Option) -> object | None:
    key, v = o.key.text, o.value
    name = decl.name.text
    if not isinstance(v, ast.Literal):
        return None  # not reached: unchecked_morphism leaves such a morphism names-only

    def bad(expect: str) -> None:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"option {key} of morphism {name} must be {expect}, not {v.raw}",
            v.span,
        )

    if key == "role":
        if v.kind != "name" or v.value not in ROLES:
            ctx.did_you_mean(
                rules.INVALID_OPTION_VALUE,
                f"unknown role '{v.raw}' on morphism {name}",
                v.span,
                str(v.raw),
                ROLES,
                otherwise=f" (roles are {', '.join(ROLES)})",
            )
            return None
        return v.value
    if key == "scale":
        if v.kind not in ("int", "float") or float(v.value) <= 0:
            bad("a positive number (the fixed standard deviation)")
            return None
        return float(v.value)
    if key in ("replicate", "hidden_dim", "rank"):
        if v.kind != "int" or int(v.value) < 1:
            bad("a positive whole number")
            return None
        return int(v.value)
    if key == "param_source":
        if v.kind != "name" or v.value not in PARAM_SOURCES:
            bad(", ".join(PARAM_SOURCES[:-1]) + " or " + PARAM_SOURCES[-1])
            return None
        return v.value
    return None


def _missing_role(
    ctx: Context, decl: ast.MorphismDecl, dom: Product | None, cod: Product | None
) -> None:
    guess = "kernel"
    if decl.family is None and dom is not None and cod is not None and dom.discrete:
        guess = "latent" if cod.discrete else "embed"
    if decl.options_span is not None:
        inside = decl.options_span.start + 1
        edit_span = ctx.lines.span(inside, inside)
        new = f"role={guess}, " if decl.options else f"role={guess}"
    else:
        at = decl.cod.span.end
        edit_span = ctx.lines.span(at, at)
        new = f" [role={guess}]"
    ctx.report(
        rules.MISSING_ROLE,
        f"morphism {decl.name.text} has no role: add [role={guess}] (roles are {', '.join(ROLES)})",
        decl.name.span,
        fixes=(Fix(f"Add role={guess}", (TextEdit(edit_span, new),), True),),
    )


def _check_role(
    ctx: Context,
    decl: ast.MorphismDecl,
    role: str,
    family: str | None,
    dom: Product,
    cod: Product,
    opts: dict[str, object],
) -> None:
    name = decl.name.text
    kernel_only = ("scale", "param_source", "hidden_dim", "rank")
    if role != "kernel":
        for o in decl.options:
            if o.key.text in kernel_only:
                ctx.report(
                    rules.OPTION_NOT_APPLICABLE,
                    f"option {o.key.text} applies to kernel morphisms, not to {role} morphism "
                    f"{name}",
                    o.span,
                )
        if decl.family is not None:
            ctx.report(
                rules.UNEXPECTED_FAMILY,
                f"{role} morphism {name} takes no family: remove '~ {decl.family.text}'",
                decl.family.span,
            )
    if role == "embed":
        if not (len(dom.factors) == 1 and dom.discrete):
            ctx.report(
                rules.ROLE_TYPE_MISMATCH,
                f"embed morphism {name} needs one FinSet domain, but {dom.label} is "
                f"{dims_text(dom)}",
                decl.dom.span,
            )
        if not cod.continuous:
            ctx.report(
                rules.ROLE_TYPE_MISMATCH,
                f"embed morphism {name} needs a continuous codomain, but {cod.label} is "
                f"{dims_text(cod)}",
                decl.cod.span,
            )
    elif role == "latent":
        for side, ref in ((dom, decl.dom), (cod, decl.cod)):
            if not (len(side.factors) == 1 and side.discrete):
                ctx.report(
                    rules.ROLE_TYPE_MISMATCH,
                    f"latent morphism {name} is a stochastic matrix between finite sets, "
                    f"but {side.label} is {dims_text(side)}",
                    ref.span,
                )
    elif role == "kernel":
        if decl.family is None:
            ctx.report(
                rules.MISSING_FAMILY,
                f"kernel morphism {name} needs a family: add '~ Normal' (or another family "
                f"that fits {cod.label})",
                decl.name.span,
                fixes=_add_family(ctx, decl, cod),
            )
        elif family is not None:
            _check_family(ctx, decl, family, cod)
        _check_kernel_options(ctx, decl, family, dom, cod, opts)


def _add_family(ctx: Context, decl: ast.MorphismDecl, cod: Product) -> tuple[Fix, ...]:
    family = family_for(cod.factors)
    if family is None:
        return ()
    at = ctx.lines.span(decl.span.end, decl.span.end)
    return (Fix(f"Add '~ {family}'", (TextEdit(at, f" ~ {family}"),), True),)


def _check_family(ctx: Context, decl: ast.MorphismDecl, family: str, cod: Product) -> None:
    """The family must have a morphism form, and each codomain factor must hold its values
    (one distribution per factor, as the runtime draws them)."""
    spec = FAMILY_TABLE[family]
    span = decl.family.span  # type: ignore[union-attr]  # `family` is its text
    name = decl.name.text
    if spec.kernel is not None and all(spec.fits(f.kind, f.size) for f in cod.factors):
        return
    better = family_for(cod.factors)
    fixes = (
        (Fix(f"Change to '{better}'", (TextEdit(span, better),), True),)
        if better is not None and better != family
        else ()
    )
    if spec.kernel is None:
        ctx.report(
            rules.FAMILY_CODOMAIN,
            f"{family} cannot be the family of morphism {name}: a parameter network drives "
            f"only {', '.join(KERNEL_FAMILIES)}",
            span,
            fixes=fixes,
        )
        return
    advice = f": use ~ {better}" if fixes else ": no family fits it; split the codomain"
    ctx.report(
        rules.FAMILY_CODOMAIN,
        f"{family} needs {codomain_words(spec)}, but morphism {name} has codomain "
        f"{cod.label} ({dims_text(cod)}){advice}",
        span,
        fixes=fixes,
    )


def _check_kernel_options(
    ctx: Context,
    decl: ast.MorphismDecl,
    family: str | None,
    dom: Product,
    cod: Product,
    opts: dict[str, object],
) -> None:
    by_key = {o.key.text: o for o in decl.options}
    name = decl.name.text
    form = FAMILY_TABLE[family].kernel if family is not None else None
    if "scale" in opts and family is not None and not (form and form.scale_option):
        ctx.report(
            rules.OPTION_NOT_APPLICABLE,
            f"option scale fixes a Normal's standard deviation; {family} morphism {name} "
            "has no scale",
            by_key["scale"].span,
        )
    source = SOURCES.get(str(opts.get("param_source")), MLP)
    if "rank" in opts:
        if source is not LINEAR:
            ctx.report(
                rules.OPTION_NOT_APPLICABLE,
                f"option rank factorises a linear parameter network: add param_source=linear "
                f"to morphism {name}",
                by_key["rank"].span,
            )
        else:
            limit = min(dom.width, _param_width(family, cod))
            if int(opts["rank"]) >= limit:  # type: ignore[call-overload]  # _options kept an int
                ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"rank {opts['rank']} of morphism {name} must be below min(input "
                    f"{dom.width}, output {_param_width(family, cod)}) = {limit} to be a "
                    "low-rank factorisation",
                    (by_key["rank"].value or by_key["rank"]).span,
                )
    if source.keeps_width and dom.width != _param_width(family, cod):
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"param_source=layer_norm normalises its input and scales each entry by its own "
            f"gain and bias, so morphism {name} must give as many numbers as it reads: "
            f"{dom.label} has {dom.width}, {family or 'its family'} needs "
            f"{_param_width(family, cod)}",
            (by_key["param_source"].value or by_key["param_source"]).span,
        )
    if "hidden_dim" in opts and not source.hidden_layer:
        ctx.report(
            rules.OPTION_NOT_APPLICABLE,
            f"option hidden_dim sizes the mlp hidden layer; morphism {name} uses "
            f"param_source={source.name}",
            by_key["hidden_dim"].span,
        )


def _param_width(family: str | None, cod: Product) -> int:
    """How many numbers the parameter network outputs (its output width)."""
    form = FAMILY_TABLE[family].kernel if family is not None else None
    return form.param_width(cod.factors) if form is not None else cod.width
