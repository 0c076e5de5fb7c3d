"""Objects, type references and morphism declarations (roles, options, families)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from itertools import product
from typing import Literal

from qvr_core.builtins.families import FAMILIES as FAMILY_TABLE
from qvr_core.builtins.families import (
    Family,
    KernelForm,
    KernelOption,
    Param,
    bind,
    codomain_words,
    family_for,
    given_support,
    network_parameters,
)
from qvr_core.builtins.objects import UNTYPED_CONSTRUCTORS
from qvr_core.builtins.param_sources import LINEAR, MLP
from qvr_core.builtins.param_sources import PARAM_SOURCES as SOURCES
from qvr_core.check import residuated
from qvr_core.check.context import (
    FAMILIES,
    KERNEL_FAMILIES,
    OPTION_KEYS,
    OPTION_ROLES,
    OPTION_VALUES,
    PARAM_SOURCES,
    ROLES,
    Context,
    SymbolKey,
    suggest,
)
from qvr_core.check.finite_objects import check_finite_constructions, is_finite_construction
from qvr_core.check.module import Given, MorphismInfo
from qvr_core.check.sized_objects import names_in, resolve_sized, room_for_a_simplex
from qvr_core.check.types import (
    CONSTRUCTORS,
    Arrow,
    ObjectType,
    Product,
    dims_text,
    inline_object,
    matrix_carrier,
    sized_by_arguments,
)
from qvr_core.check.unchecked import note, refer
from qvr_core.syntax import ast
from qvr_core.syntax.builder import MAX_OBJECT_SIZE
from qvr_core.text import rules
from qvr_core.text.diagnostics import Fix, Related, TextEdit
from qvr_core.text.span import Span

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
    universes: list[ast.ObjectDecl] = []
    constructed: list[ast.ObjectDecl] = []
    sized: list[ast.ObjectDecl] = []
    for d in one_each:
        ctx.object_decls.setdefault(d.name.text, d)
        body = d.body
        if isinstance(body, ast.EnumSet):
            _enumerated_object(ctx, d, body)
        elif isinstance(body, ast.ObjApply) and body.func.text == residuated.FREE_RESIDUATED:
            universes.append(d)  # once its atoms' object is known, below
        elif residuated.is_pattern(ctx, body, frozenset({d.name.text})):
            residuated.pattern_alias(ctx, d)
        elif is_finite_construction(body):
            constructed.append(d)  # once the sets it is made of are known, below
        elif sized_by_arguments(body):
            sized.append(d)  # `Real D`: once the objects it is sized by are known, below
        elif not isinstance(body, ast.SizedObject | ast.TypeRef) or (
            isinstance(body, ast.SizedObject) and body.constructor.text in OTHER_CONSTRUCTORS
        ):
            refer(ctx, body)
            note(ctx, d.name.span, f"object {d.name.text}")
        else:
            decls.append(d)
    for d in decls:
        if isinstance(d.body, ast.SizedObject):
            _base_object(ctx, d, d.body)
    # sized by base objects first, so that aliases may use them; by aliases and made
    # sets after those
    later = [d for d in sized if not _sized_object(ctx, d, first=True)]
    pending = {d.name.text: d for d in decls if isinstance(d.body, ast.TypeRef)}
    for name in list(pending):
        _alias(ctx, name, pending, ())
    for d in universes:
        assert isinstance(d.body, ast.ObjApply)
        residuated.free_residuated(ctx, d, d.body)
    check_finite_constructions(ctx, constructed)
    for d in later:
        _sized_object(ctx, d, first=False)


def _sized_object(ctx: Context, decl: ast.ObjectDecl, first: bool) -> bool:
    """`object X : Real D`: typed once what it names is (`first`: only if it names base
    objects); whether it was taken."""
    body = decl.body
    assert isinstance(body, ast.ObjCtor)
    if first and any(n not in ctx.objects for n in names_in(body)):
        return False
    found = resolve_sized(ctx, body, resolve_type, decl.name.text)
    if found is not None:
        if len(found.factors) == 1 and found.written == (decl.name.text,):
            factor = found.factors[0]
            ctx.objects[decl.name.text] = dataclasses.replace(factor, name=decl.name.text)
            ctx.record_type(decl.name.span, ctx.objects[decl.name.text])
        else:
            ctx.aliases[decl.name.text] = found
            ctx.record_type(decl.name.span, found)
    return True


def _enumerated_object(ctx: Context, decl: ast.ObjectDecl, body: ast.EnumSet) -> None:
    """`object Token : {the, dog, runs}`: a finite set given by its elements, which
    quivers builds as an `EnumSet` of that many elements (0.25.2, `_compile_type`); as
    a plate or a value it is a FinSet of that size, its elements named in hover."""
    seen = ctx.once_each(
        list(body.elements), f"object {decl.name.text} lists the element '{{name}}' twice"
    )
    if not seen:
        return  # `{}`: the parser has reported it
    found = ObjectType(decl.name.text, "finset", len(seen), tuple(seen))
    ctx.objects[decl.name.text] = found
    ctx.record_type(decl.name.span, found)


def _base_object(ctx: Context, decl: ast.ObjectDecl, body: ast.SizedObject) -> None:
    ctor = body.constructor
    kind = CONSTRUCTORS.get(ctor.text)
    if kind is None:
        ctx.undefined(ctor, "type constructor", list(CONSTRUCTORS))
        return
    if body.size is None:
        return
    room_for_a_simplex(ctx, kind, body.size, f"Simplex {body.size}", body.size_span or body.span)
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
    or for an object expression the checker does not type yet: its names are recorded).
    An unnamed sized object (`Real 64`) is one factor named as written."""
    if isinstance(ref, ast.ObjCtor) and inline_object(ref):
        return resolve_sized(ctx, ref, resolve_type)
    if isinstance(ref, ast.SizedObject) and inline_object(ref):
        if ref.size is None:
            assert ref.size_span is not None
            ctx.report(
                rules.OBJECT_SIZE,
                f"{ctx.source(ref.span)}: a size is a whole number from 1 to "
                f"{MAX_OBJECT_SIZE:,} (the most entries a tensor axis holds)",
                ref.size_span,
            )
            return None
        written = ctx.source(ref.span)
        found = ObjectType(written, CONSTRUCTORS[ref.constructor.text], ref.size)
        product = Product((found,), (written,))
        ctx.record_type(ref.span, product)
        return product
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
            if residuated.pattern_name(ctx, f.text):
                residuated.refuse_as_type(ctx, f)
                continue
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
    if not all(type(side) is ast.TypeRef or inline_object(side) for side in (decl.dom, decl.cod)):
        return "its domain or codomain"
    if decl.init is not None:
        return "its initialiser"
    family = decl.family.text if decl.family else None
    if family is not None and family not in FAMILIES and not suggest(family, FAMILIES):
        return f"family {family}, which the registry of families does not have"
    spec = _family_spec(decl)
    form = spec.kernel if spec is not None else None
    for o in decl.options:
        key = o.key.text
        if _family_reads(form, key):
            if not isinstance(o.value, ast.Literal | ast.ValueList):
                return f"option {key}"
            continue  # the family reads it (`_family_option` checks its value)
        if spec is not None and key not in OPTION_KEYS and spec.param(key) is not None:
            if not _is_number(o.value):
                return f"option {key}, a parameter of {spec.name} given as a name"
            continue
        if key == _STEP_IID:
            continue  # not a morphism's option in quivers: `_options` reports it
        if key in _MORPHISM_AXIS_OPTIONS and _is_latent(decl):
            continue  # the axes of a latent's prior (`_latent_prior` checks them)
        if key in _MORPHISM_AXIS_OPTIONS:
            return (
                f"option {key}: it names axes of one {family or 'family'} draw, but a "
                "morphism's draw is one value of its codomain, which qvr does not split "
                "into axes"
            )
        if key not in OPTION_KEYS and not suggest(key, OPTION_KEYS):
            return f"option {key}"
        if type(o.value) is not ast.Literal or o.value.kind == "string":
            return f"option {key}"
    if decl.family_args is not None and spec is not None:
        return _unchecked_arguments(decl, spec)
    return None


#: quivers' axis-role options (`over=`, `iid=`): which axes of a draw are its event.
_MORPHISM_AXIS_OPTIONS = ("over", "iid")
#: A sample step's spelling of `iid=`, which quivers' morphisms do not take
#: (`_MORPHISM_OPTION_KEYS`).
_STEP_IID = "iid_over"
#: The option that names the two finite sets a matrix kernel's draw runs over.
_OVER = _MORPHISM_AXIS_OPTIONS[0]


def _family_spec(decl: ast.MorphismDecl) -> Family | None:
    """The registry's entry of the declared family, if it has one."""
    return FAMILY_TABLE.get(decl.family.text) if decl.family is not None else None


def _family_reads(form: KernelForm | None, key: str) -> bool:
    """An option the declared family reads itself: one of its kernel form's (`rank=` of a
    LowRankMVN, `kernel=` of a GP), or `over=[Row, Col]` on a kernel whose draw is a
    matrix over two finite sets."""
    return form is not None and (
        form.option(key) is not None or (key == _OVER and form.draw == "axes")
    )


def _unchecked_arguments(decl: ast.MorphismDecl, spec: Family) -> str | None:
    """What in `~ F(args)` the checker does not type: a prior on a latent morphism's
    tensor, a discrete or matrix family's fixed draws, an argument that is not a number
    or a list of them (a name quivers binds when it fits the model)."""
    if _is_latent(decl):
        return None  # a latent's prior: its axes are checked, its arguments never read
    if spec.discrete:
        return f"~ {spec.name}(...): a discrete family with arguments"
    if spec.event_rank >= 2:
        return f"~ {spec.name}(...): its draw is a matrix"
    call = decl.family_args
    assert call is not None
    for arg in (*call.args, *(kw.value for kw in call.kwargs)):
        if not _literal_value(arg):
            if isinstance(arg, ast.Literal | ast.NameRef):
                what = f"'{arg.value if isinstance(arg, ast.Literal) else arg.name.text}'"
            else:
                what = "an expression"
            return f"its argument {what} to {spec.name}, not a number or a list of numbers"
    return None


def _is_latent(decl: ast.MorphismDecl) -> bool:
    """Whether the declaration says `role=latent` (as written: before any checking)."""
    roles = [o.value for o in decl.options if o.key.text == "role"]
    return any(isinstance(r, ast.Literal) and r.value == "latent" for r in roles)


def _latent_prior(ctx: Context, decl: ast.MorphismDecl, family: str | None) -> None:
    """`[role=latent, over=cod, iid=dom] ~ Dirichlet(alpha)`: quivers 0.25.2
    (`_compile_latent_role`, `_validate_family_axes`) checks the axes against the
    family's draw and then builds the latent without the prior. The axes are the sides
    written as one object (`dom`, `cod`) and every factor named; `over` lists as many as a
    draw of the family has axes, and no axis is in both lists. qvr checks the same and
    says, at the family, that the prior is not used."""
    assert decl.family is not None
    spec = FAMILY_TABLE.get(family) if family is not None else None
    axes = {o.key.text: o for o in decl.options if o.key.text in _MORPHISM_AXIS_OPTIONS}
    if spec is not None and axes:
        available = _axis_names(decl)
        named: dict[str, list[str]] = {}
        for key, o in axes.items():
            items = o.value.items if isinstance(o.value, ast.ValueList) else (o.value,)
            named[key] = [ctx.source(i.span) for i in items if i is not None]
        over, iid = named.get(_OVER, []), named.get(_MORPHISM_AXIS_OPTIONS[1], [])
        where = (axes.get(_OVER) or next(iter(axes.values()))).span
        problem = None
        if len(over) != spec.event_rank:
            problem = (
                f"a draw of {spec.name} has {spec.event_rank} "
                f"{'axis' if spec.event_rank == 1 else 'axes'}, and over= names {len(over)}"
            )
        elif bad := [a for a in (*over, *iid) if a not in available]:
            problem = (
                f"{', '.join(bad)} is no axis of morphism {decl.name.text}: its axes are "
                f"{', '.join(sorted(available))}"
            )
        elif both := sorted(set(over) & set(iid)):
            problem = f"{', '.join(both)} is in both over= and iid=: an axis has one role"
        if problem is not None:
            ctx.report(rules.INVALID_OPTION_VALUE, f"the prior's axes: {problem}", where)
            return
    ctx.report(
        rules.LATENT_PRIOR,
        f"the prior ~ {decl.family.text}(...) of latent morphism {decl.name.text} is not "
        "used: quivers checks its axes and fits the latent's tensor without it, and so "
        "does qvr",
        decl.family.span,
    )


def _axis_names(decl: ast.MorphismDecl) -> set[str]:
    """The axes a latent's prior may name (quivers' `_available_axes_for`): `dom` or `cod`
    for a side written as one object, and every factor named on either side."""
    out: set[str] = set()
    for shortcut, side in (("dom", decl.dom), ("cod", decl.cod)):
        if isinstance(side, ast.TypeRef):
            out |= {f.text for f in side.factors}
            if len(side.factors) == 1:
                out.add(shortcut)
    return out


def _is_number(value: object) -> bool:
    return isinstance(value, ast.Literal) and value.kind in ("int", "float")


def _float(node: object) -> float:
    """A number literal's value (after `_literal_value` said it is one)."""
    assert isinstance(node, ast.Literal) and not isinstance(node.value, str)
    return float(node.value)


def _literal_value(node: object) -> bool:
    """A number, a list of numbers or a list of such lists (a matrix)."""
    if _is_number(node):
        return True
    if isinstance(node, ast.ListArg) and node.items:
        if all(_is_number(i) for i in node.items):
            return True
        return all(
            isinstance(i, ast.ListArg) and i.items and all(_is_number(j) for j in i.items)
            for i in node.items
        )
    return False


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
    if "role" not in opts and (family is not None or _table(dom, cod)):
        # quivers 0.25.2: a morphism without a role is a kernel; `~ Family` makes a
        # parametric one, and without a family between finite sets it is a table
        role = "kernel"
    elif "role" not in opts and not _role_was_bad(ctx, decl):
        _missing_role(ctx, decl, dom, cod)
    if dom is None or cod is None:
        return None
    arrow = Arrow(dom, cod)
    given: Fixed | None = None
    drawn: Drawn | None = None
    if role is not None:
        checked = _check_role(ctx, decl, str(role), family, dom, cod, opts)
        if checked is False:
            return None  # `~ F(args)` or a whole draw in error (reported): nothing to run
        if isinstance(checked, Drawn):
            drawn = checked
            arrow = Arrow(dom, checked.carrier or cod)
        else:
            given = checked
    scale = opts.get("scale")
    rank = opts.get("rank") if drawn is None or "rank" not in dict(drawn.options) else None
    replicate = opts.get("replicate")
    return MorphismInfo(
        name=decl.name.text,
        decl=decl,
        type=arrow,
        role=str(role) if role is not None else None,
        family=family,
        scale=float(scale) if isinstance(scale, int | float) else None,
        init=str(opts["init"]) if "init" in opts else None,
        replicate=int(replicate) if isinstance(replicate, int) else None,
        param_source=str(opts.get("param_source", "mlp")),
        hidden_dim=int(opts.get("hidden_dim", 64)),  # type: ignore[call-overload]  # _options kept an int
        rank=int(rank) if isinstance(rank, int) else None,
        bins=int(opts["bins"]) if role == "discretize" and "bins" in opts else None,  # type: ignore[call-overload]  # _options kept an int
        given=given.values if given is not None else None,
        network=given.network if given is not None else (),
        draw=drawn.shape if drawn is not None else (),
        family_options=drawn.options if drawn is not None else (),
    )


def _table(dom: Product | None, cod: Product | None) -> bool:
    """Whether a kernel without a family is quivers' table between finite sets (a
    `StochasticMorphism`: each row a categorical distribution over the codomain)."""
    return dom is not None and cod is not None and dom.discrete and cod.discrete


def _role_was_bad(ctx: Context, decl: ast.MorphismDecl) -> bool:
    return any(o.key.text == "role" for o in decl.options)


def _options(ctx: Context, decl: ast.MorphismDecl) -> dict[str, object]:
    """Validate option keys and value types; keep the valid ones."""
    out: dict[str, object] = {}
    seen: dict[str, ast.Option] = {}
    spec = _family_spec(decl)
    form = spec.kernel if spec is not None else None
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
        if form is not None and _family_reads(form, key):
            value = _family_option(ctx, decl, o, form.option(key))
            if value is not None:
                out[key] = value
            continue
        if key not in OPTION_KEYS and spec is not None and spec.param(key) is not None:
            # `[temperature=0.5] ~ RelaxedBernoulli`: an option named after a parameter of
            # the family fixes that parameter, as quivers' compiler reads it (`_given`)
            continue
        if key == _STEP_IID:  # quivers' morphisms take `iid=`, its steps `iid_over=`
            ctx.did_you_mean(
                rules.UNKNOWN_OPTION,
                f"unknown option '{key}' on morphism {decl.name.text}: a morphism's axes "
                f"are `{_MORPHISM_AXIS_OPTIONS[0]}=` and `{_MORPHISM_AXIS_OPTIONS[1]}=` "
                f"(`{key}=` is a sample step's)",
                o.key.span,
                key,
                _MORPHISM_AXIS_OPTIONS,
                close=[_MORPHISM_AXIS_OPTIONS[1]],
            )
            continue
        if key in _MORPHISM_AXIS_OPTIONS and decl.family is not None and _is_latent(decl):
            continue  # the axes of a latent's prior: `_latent_prior` checks them
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


def _family_option(
    ctx: Context, decl: ast.MorphismDecl, o: ast.Option, option: KernelOption | None
) -> object | None:
    """The value of an option the declared family reads itself (`rank=2` of a LowRankMVN,
    `kernel=rbf` of a GP; `over=[Row, Col]` of a MatrixNormal, as the finite sets named),
    or None after an error, reported."""
    v = o.value
    family = decl.family.text  # type: ignore[union-attr]  # a family reads it
    if option is None:  # `over=`: two finite sets, the rows' and the columns'
        items = v.items if isinstance(v, ast.ValueList) else (v,)
        axes: list[ObjectType] = []
        for item in items:
            if not isinstance(item, ast.Literal):
                break
            obj = ctx.objects.get(str(item.value))
            if obj is None or not obj.discrete:
                break
            ctx.ref(item.span, SymbolKey(obj.name))
            axes.append(obj)
        if len(axes) == len(items) == 2:
            return tuple(axes)
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"option {o.key.text} of a {family} morphism names the two finite sets its draw "
            f"runs over, rows then columns (over=[Row, Col]), not {ctx.source(o.span)}",
            o.span,
        )
        return None
    if isinstance(v, ast.Literal) and option.choices:
        if v.kind == "name" and v.value in option.choices:
            return str(v.value)
        expect = f"{', '.join(option.choices[:-1])} or {option.choices[-1]}"
    elif isinstance(v, ast.Literal) and option.whole:
        if v.kind == "int" and int(v.value) >= 1:
            return int(v.value)
        expect = "a positive whole number"
    else:
        if isinstance(v, ast.Literal) and v.kind in ("int", "float") and float(v.value) > 0:
            return float(v.value)
        expect = "a positive number"
    written = ctx.source(v.span) if v is not None else "nothing"
    ctx.report(
        rules.INVALID_OPTION_VALUE,
        f"option {option.name} of a {family} morphism must be {expect}, not {written}: "
        f"{option.doc}",
        v.span if v is not None else o.span,
    )
    return None


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
            bad(
                "a positive number (a kernel's fixed standard deviation, a latent's initial spread)"
            )
            return None
        return float(v.value)
    if key == "init":
        if v.kind != "name" or v.value not in OPTION_VALUES["init"]:
            bad("auto (the composition rule's own start, as quivers' init=auto)")
            return None
        return v.value
    if key in ("replicate", "hidden_dim", "rank", "bins"):
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
    guess = "kernel"  # (between finite sets a morphism without a role is a table kernel)
    if decl.family is None and dom is not None and cod is not None and dom.discrete:
        guess = "embed"
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
) -> Fixed | Drawn | Literal[False] | None:
    """Check what the role asks of the declaration; for a kernel, its given parameters
    (`~ F(args)`) or the shape of its one draw (a whole-draw family), False when they are
    in error, else None."""
    name = decl.name.text
    for o in decl.options:
        applies = OPTION_ROLES.get(o.key.text)
        if applies is not None and role not in applies:
            ctx.report(
                rules.OPTION_NOT_APPLICABLE,
                f"option {o.key.text} applies to {' and '.join(applies)} morphisms, not to "
                f"{role} morphism {name}",
                o.span,
            )
    if role == "latent" and decl.family is not None:
        _latent_prior(ctx, decl, family)
    elif role != "kernel" and decl.family is not None:
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
    elif role == "discretize":
        _check_discretize(ctx, decl, dom, cod, opts)
    elif role == "latent":
        # a product of finite sets is an axis each under a declared composition rule:
        # whether the file declares one is the whole module's (algebras.latent_products)
        for side, ref in ((dom, decl.dom), (cod, decl.cod)):
            if not side.discrete:
                ctx.report(
                    rules.ROLE_TYPE_MISMATCH,
                    f"latent morphism {name} is a matrix between finite sets, "
                    f"but {side.label} is {dims_text(side)}",
                    ref.span,
                )
    elif role == "kernel":
        given: Fixed | None = None
        if decl.family is None and _table(dom, cod):
            return None  # a table kernel: a distribution over cod for each value of dom
        if decl.family is None:
            ctx.report(
                rules.MISSING_FAMILY,
                f"kernel morphism {name} needs a family: add '~ Normal' (or another family "
                f"that fits {cod.label})",
                decl.name.span,
                fixes=_add_family(ctx, decl, cod),
            )
        elif family is not None and _gives_parameters(decl, FAMILY_TABLE[family]):
            given = _given(ctx, decl, FAMILY_TABLE[family], cod)
            if given is None:
                return False
        elif family is not None and _whole_draw(FAMILY_TABLE[family]):
            drawn = _check_whole_draw(ctx, decl, FAMILY_TABLE[family], dom, cod, opts)
            if drawn is None:
                return False
            _check_kernel_options(ctx, decl, family, dom, cod, opts, None, drawn)
            return drawn
        elif family is not None:
            _check_family(ctx, decl, family, cod)
        _check_kernel_options(ctx, decl, family, dom, cod, opts, given)
        return given
    return None


def _check_discretize(
    ctx: Context, decl: ast.MorphismDecl, dom: Product, cod: Product, opts: dict[str, object]
) -> None:
    """`role=discretize, bins=N`: quivers' `Discretize` bins one bounded real number into
    N bins (its compiler and `continuous/boundaries.py` refuse any other domain, and a
    missing `bins`); the codomain must be a finite set of N values, which quivers makes
    whatever is declared."""
    name = decl.name.text
    factor = dom.factors[0] if len(dom.factors) == 1 else None
    if factor is None or factor.discrete or factor.width != 1 or factor.interval is None:
        ctx.report(
            rules.ROLE_TYPE_MISMATCH,
            f"discretize morphism {name} bins one bounded number (`Real 1 {{low=a, high=b}}`), "
            f"but {dom.label} is {dims_text(dom)}"
            + ("" if factor is None or factor.interval else " without bounds"),
            decl.dom.span,
        )
    bins = opts.get("bins")
    if bins is None:
        if not any(o.key.text == "bins" for o in decl.options):  # else reported as invalid
            ctx.report(
                rules.INVALID_OPTION_VALUE,
                f"discretize morphism {name} needs `bins=N`, the number of bins",
                decl.name.span,
            )
        return
    if not (cod.discrete and cod.size == bins):
        ctx.report(
            rules.ROLE_TYPE_MISMATCH,
            f"discretize morphism {name} makes {bins} bins, but {cod.label} is {dims_text(cod)}",
            decl.cod.span,
        )


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A whole-draw kernel's checked facts: the shape of its one draw, and the options its
    family reads, each with its value or default (`MorphismInfo.draw`, `family_options`)."""

    shape: tuple[int, ...]
    options: tuple[tuple[str, float | str], ...]
    #: The codomain as the draw fills it, where that differs from the declared one: quivers
    #: reads a codomain `Row * Col` equal to `over=[Row, Col]` as the matrix's real entries.
    carrier: Product | None = None


def _whole_draw(spec: Family) -> bool:
    return spec.kernel is not None and spec.kernel.whole_draw


def _check_whole_draw(
    ctx: Context,
    decl: ast.MorphismDecl,
    spec: Family,
    dom: Product,
    cod: Product,
    opts: dict[str, object],
) -> Drawn | None:
    """`~ MultivariateNormal`, `~ Wishart`, `~ GP`, ...: one draw is a vector or a matrix
    that fills the codomain, one Real object, row by row (quivers' carrier of a matrix
    is its entries so flattened); a K x K matrix needs K * K numbers, a matrix over
    `over=[Row, Col]` |Row| * |Col|, and a GP's input splits into one location per number.
    None after an error, reported."""
    form = spec.kernel
    assert form is not None and decl.family is not None
    span, name, family = decl.family.span, decl.name.text, spec.name
    axes: tuple[ObjectType, ...] = opts.get(_OVER, ())  # type: ignore[assignment]  # _family_option
    if form.draw == "axes" and not axes:
        if not any(o.key.text == _OVER for o in decl.options):  # else reported there
            ctx.report(
                rules.FAMILY_CODOMAIN,
                f"a {family} draw is a matrix over two finite sets: name them, rows then "
                f"columns, with over=[Row, Col] on morphism {name}",
                span,
            )
        return None
    sizes = tuple(a.size for a in axes)
    what = {
        "vector": "one vector",
        "square_matrix": "one K x K matrix",
        "axes": f"one real {' x '.join(map(str, sizes))} matrix over "
        f"{' and '.join(a.name for a in axes)}",
    }[form.draw]
    carrier = None
    if form.draw == "axes" and cod.names == tuple(a.name for a in axes):
        # quivers: "the codomain's product factorisation supplies the row and column
        # dimensions"; the value is the real matrix, held row by row as in a Real object.
        cod = carrier = matrix_carrier(cod, math.prod(sizes))
    if len(cod.factors) != 1 or cod.factors[0].kind != "real":
        ctx.report(
            rules.FAMILY_CODOMAIN,
            f"a {family} draw is {what}, but morphism {name} has codomain {cod.label} "
            f"({dims_text(cod)}), and the draw fills one Real object (a matrix row by row)",
            span,
        )
        return None
    draw = form.draw_shape(cod.width, sizes)
    if draw is None:
        need = (
            "a square number of them (4, 9, 16, ...)"
            if form.draw == "square_matrix"
            else f"{math.prod(sizes)} of them"
        )
        ctx.report(
            rules.FAMILY_CODOMAIN,
            f"a {family} draw is {what} held row by row in its codomain, which needs "
            f"{need}: {cod.label} of morphism {name} has {cod.width}",
            span,
        )
        return None
    if form.outputs == "flow" and not _flow_fits(ctx, decl, family, cod):
        return None
    features = sum(f.size for f in dom.factors)  # a FinSet one-hot, a space as it is
    if form.outputs == "hyperparameters" and form.reads_input and features % draw[0]:
        ctx.report(
            rules.FAMILY_CODOMAIN,
            f"a {family} kernel draws the process at one location per number of its codomain "
            f"({draw[0]} for {cod.label}), the input's features split into as many equal "
            f"parts, and the {features} features of {dom.label} do not split so",
            span,
        )
        return None
    options = tuple((o.name, _option_or_default(opts, o)) for o in form.options)
    return Drawn(draw, options, carrier)


def _flow_fits(ctx: Context, decl: ast.MorphismDecl, family: str, cod: Product) -> bool:
    """quivers' `ConditionalFlow` couples halves of a vector of at least 2 numbers."""
    assert decl.family is not None
    if cod.width < 2:
        ctx.report(
            rules.FAMILY_CODOMAIN,
            f"a {family} couples two halves of its draw, so its codomain needs at least 2 "
            f"numbers: {cod.label} of morphism {decl.name.text} has {cod.width} (a Normal "
            "kernel draws one)",
            decl.family.span,
        )
        return False
    return True


def _option_or_default(opts: dict[str, object], option: KernelOption) -> float | str:
    value = opts.get(option.name, option.default)
    assert isinstance(value, int | float | str)
    return value


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
    if spec.improper:
        ctx.report(
            rules.FAMILY_CODOMAIN,
            f"{family} is an improper prior, only a program's latent's (`sample b <- "
            f"{spec.signature()}`): a morphism's family must be a distribution to draw from",
            span,
            fixes=fixes,
        )
        return
    if spec.kernel is None:
        # a declaration that gives every parameter needs no network (`_given`)
        given = (
            f"; or give its parameters, ~ {spec.signature()}"
            if not spec.discrete and spec.event_rank < 2
            else ""
        )
        ctx.report(
            rules.FAMILY_CODOMAIN,
            f"{family} cannot be the family of morphism {name}: a parameter network drives "
            f"only {', '.join(KERNEL_FAMILIES)}{given}",
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
    given: Fixed | None,
    drawn: Drawn | None = None,
) -> None:
    by_key = {o.key.text: o for o in decl.options}
    name = decl.name.text
    spec = FAMILY_TABLE[family] if family is not None else None
    form = spec.kernel if spec is not None else None
    # how many numbers the parameter network outputs (its output width)
    if given is not None:
        width = len(given.network) * cod.width
    elif spec is None or form is None:
        width = cod.width
    elif drawn is not None:
        width = spec.network_width(cod.factors, drawn.shape, dict(drawn.options))
    else:
        width = spec.network_width(cod.factors)
    if (given is not None and not given.network) or (drawn is not None and not width):
        learned = " and ".join(p.name for p in spec.params) if spec is not None else ""
        flow = form is not None and form.outputs == "flow"
        why = (
            f"its declaration gives every parameter of {family}"
            if given is not None
            else f"{family}'s coupling layers are its networks, of hidden_dim units"
            if flow
            else f"{family} learns its own {learned}"
        )
        network_keys = (
            "param_source",
            *(() if flow else ("hidden_dim",)),
            "rank",
            *(("scale",) if drawn else ()),
        )
        for key in network_keys:
            if key in opts and not (form and form.option(key)):
                ctx.report(
                    rules.OPTION_NOT_APPLICABLE,
                    f"option {key} configures a parameter network, and morphism {name} has "
                    f"none: {why}",
                    by_key[key].span,
                )
        return
    if "scale" in opts and family is not None and not (form and form.scale_option):
        ctx.report(
            rules.OPTION_NOT_APPLICABLE,
            f"option scale fixes a Normal's standard deviation; {family} morphism {name} "
            "has no scale",
            by_key["scale"].span,
        )
    source = SOURCES.get(str(opts.get("param_source")), MLP)
    if "rank" in opts and not (form and form.option("rank")):  # else the family's own rank
        if source is not LINEAR:
            ctx.report(
                rules.OPTION_NOT_APPLICABLE,
                f"option rank factorises a linear parameter network: add param_source=linear "
                f"to morphism {name}",
                by_key["rank"].span,
            )
        else:
            limit = min(dom.width, width)
            if int(opts["rank"]) >= limit:  # type: ignore[call-overload]  # _options kept an int
                ctx.report(
                    rules.INVALID_OPTION_VALUE,
                    f"rank {opts['rank']} of morphism {name} must be below min(input "
                    f"{dom.width}, output {width}) = {limit} to be a "
                    "low-rank factorisation",
                    (by_key["rank"].value or by_key["rank"]).span,
                )
    if source.keeps_width and dom.width != width:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"param_source=layer_norm normalises its input and scales each entry by its own "
            f"gain and bias, so morphism {name} must give as many numbers as it reads: "
            f"{dom.label} has {dom.width}, {family or 'its family'} needs {width}",
            (by_key["param_source"].value or by_key["param_source"]).span,
        )
    if "hidden_dim" in opts and not source.hidden_layer:
        ctx.report(
            rules.OPTION_NOT_APPLICABLE,
            f"option hidden_dim sizes the mlp hidden layer; morphism {name} uses "
            f"param_source={source.name}",
            by_key["hidden_dim"].span,
        )


# ------------------------------------------------------- `~ F(args)` on a morphism


@dataclasses.dataclass(frozen=True)
class Fixed:
    """The parameters a morphism's declaration gives its family (`values`, in the
    schema's order) and those its parameter network gives (`network`)."""

    values: tuple[tuple[str, Given], ...]
    network: tuple[str, ...]


def _gives_parameters(decl: ast.MorphismDecl, spec: Family) -> bool:
    """`~ F(args)`, or an option named after a parameter of F: the declaration fixes
    parameters of its family (quivers' `~ Cauchy(0.0, 1.0)`, `[temperature=0.5]`)."""
    reads = spec.kernel.option if spec.kernel is not None else (lambda _: None)
    return decl.family_args is not None or any(
        o.key.text not in OPTION_KEYS
        and spec.param(o.key.text) is not None
        and reads(o.key.text) is None  # a GP's `length_scale=`: where it starts, learned
        for o in decl.options
    )


def _given(ctx: Context, decl: ast.MorphismDecl, spec: Family, cod: Product) -> Fixed | None:
    """Type `~ F(args)` on a kernel morphism (None after an error, reported).

    The arguments bind to F's parameters as a family step's do (positional in order,
    keywords by name, a vector's entries spread), and so do the options named after a
    parameter, and `scale=` on a Normal (its fixed standard deviation); a number
    parameter takes one number for every codomain coordinate or one per coordinate.
    Each value must lie in its parameter's constraint, the network must be able to give
    the parameters left out (`network_parameters`), and the draw, with the support
    the given bounds fix, must be a value of the codomain: one number per coordinate,
    or for a vector family one vector filling a codomain of one object."""
    name = decl.name.text
    call = decl.family_args
    span = call.span if call is not None else decl.family.span  # type: ignore[union-attr]  # a kernel with a family
    positional = spread_entries(ctx, spec, call.args if call is not None else ())
    keywords: dict[str, object] = {kw.key.text: kw.value for kw in call.kwargs} if call else {}
    form = spec.kernel
    if spec.kernel_only:  # a GP: its parameters are learned, from where options start them
        starts = [o for o in form.options if spec.param(o.name)] if form else []
        example = f" ([{starts[0].name}={starts[0].default}])" if starts else ""
        ctx.report(
            rules.FAMILY_ARGUMENTS,
            f"morphism {name} ~ {spec.name}: its {', '.join(p.name for p in spec.params)} "
            f"are learned, not given; an option of the same name says where one starts"
            f"{example}",
            span,
        )
        return None
    for o in decl.options:
        key = o.key.text
        by_option = key not in OPTION_KEYS or (key == "scale" and form and form.scale_option)
        if not (by_option and spec.param(key) is not None and o.value is not None):
            continue
        if key in keywords:
            ctx.report(
                rules.FAMILY_ARGUMENTS,
                f"{spec.name}: '{key}' is given twice, as an option of morphism {name} and as "
                "an argument",
                o.span,
            )
            return None
        keywords[key] = o.value
    bound = bind(spec, positional, keywords, partial=True)
    if isinstance(bound, str):
        report_binding(ctx, spec, bound, span)
        return None
    schema, nodes = bound
    values: dict[str, Given] = {}
    for param in schema:
        if param.name in nodes:
            value = _given_value(ctx, spec, param, nodes[param.name], cod)
            if value is None:
                return None
            values[param.name] = value
    network = network_parameters(spec, schema, values)
    if isinstance(network, str):
        ctx.report(rules.FAMILY_ARGUMENTS, f"morphism {name} ~ {spec.name}: {network}", span)
        return None
    if not _check_given_literals(ctx, spec, values, nodes):
        return None
    if not _check_given_draw(ctx, decl, spec, values, cod):
        return None
    return Fixed(
        tuple((p.name, values[p.name]) for p in schema if p.name in values),
        tuple(p.name for p in network),
    )


def _given_value(
    ctx: Context, spec: Family, param: Param, node: object, cod: Product
) -> Given | None:
    """The literal of one parameter in its shape: a number, a list (one number per
    coordinate, or a vector parameter) or a matrix; None after an error, reported."""
    span: Span = node.span  # type: ignore[attr-defined]  # every argument node has one
    written = ctx.source(span)
    value: Given
    if _is_number(node):
        value = _float(node)
    elif isinstance(node, ast.ListArg) and all(_is_number(i) for i in node.items):
        value = tuple(_float(i) for i in node.items)
    else:
        assert isinstance(node, ast.ListArg)
        rows = [tuple(_float(j) for j in getattr(i, "items", ())) for i in node.items]
        if len({len(r) for r in rows}) != 1:
            ctx.report(
                rules.FAMILY_ARGUMENTS, f"{param.name}={written}: its rows differ in length", span
            )
            return None
        value = tuple(rows)
    depth = 0 if isinstance(value, float) else (2 if isinstance(value[0], tuple) else 1)
    ok = depth == param.rank
    if param.rank == 0 and depth == 1:  # one number per coordinate of the draw
        ok = spec.event_rank == 0 and len(value) == cod.width  # type: ignore[arg-type]  # a list
        if not ok:
            ctx.report(
                rules.ARGUMENT_PLATE,
                f"{param.name} of {spec.name} is a number: give one for all coordinates, or "
                f"one per coordinate of {cod.label} ({cod.width}), not {len(value)} numbers",  # type: ignore[arg-type]  # a list
                span,
            )
            return None
    elif param.rank == 1 and depth == 0:  # a number spread over the draw's entries
        ok = spec.event_rank == 1 and param.constraint.kind != "simplex"
    if not ok:
        ctx.report(
            rules.FAMILY_ARGUMENTS,
            f"{param.name} of {spec.name} is {param.constraint.describe()}, not {written}",
            span,
        )
        return None
    return value


def _check_given_literals(
    ctx: Context, spec: Family, values: dict[str, Given], nodes: dict[str, object]
) -> bool:
    """Every given number inside its parameter's constraint (`Cauchy(0.0, -1.0)`), a
    probability vector summing to 1, a Cholesky factor lower-triangular with a positive
    diagonal. Reports the first violation of each parameter; False when there was one."""
    numbers = {k: v for k, v in values.items() if isinstance(v, float)}
    ok = True
    for pname, value in values.items():
        param = spec.param(pname)
        assert param is not None
        span: Span = nodes[pname].span  # type: ignore[attr-defined]  # argument nodes have spans
        kind = param.constraint.kind
        entries: list[float] = []
        if isinstance(value, float):
            entries = [value]
        else:
            for v in value:
                entries.extend(v if isinstance(v, tuple) else (v,))
        constraint = param.constraint.entry  # a per-coordinate list: each entry
        bad: str | None = None
        for v in entries:
            if constraint.admits(v, numbers) is False:
                bad = number_text(v) if len(entries) > 1 else ctx.source(span)
                break
        if bad is None and kind == "simplex" and isinstance(value, tuple):
            flat = [float(v) for v in value]  # type: ignore[arg-type]  # a vector
            if any(v < 0 for v in flat) or abs(sum(flat) - 1.0) > 1e-6:
                bad = ctx.source(span)
        if bad is None and kind == "lower_cholesky" and isinstance(value, tuple):
            rows = [r for r in value if isinstance(r, tuple)]
            square = len(rows) == len(value) and all(len(r) == len(rows) for r in rows)
            if not square or any(
                (j > i and r[j] != 0) or (j == i and r[j] <= 0)
                for i, r in enumerate(rows)
                for j in range(len(r))
            ):
                bad = ctx.source(span)
        if bad is not None:
            report_constraint(ctx, spec, param, bad, span)
            ok = False
    low, high = spec.support.low, spec.support.high
    if ok and isinstance(low, str) and isinstance(high, str) and low in values and high in values:
        lows, highs = _entries(values[low]), _entries(values[high])
        pairs = zip(lows, highs, strict=True) if len(lows) == len(highs) else product(lows, highs)
        if any(a >= b for a, b in pairs):
            span = nodes[high].span  # type: ignore[attr-defined]  # argument nodes have spans
            ctx.report(
                rules.ARGUMENT_CONSTRAINT,
                f"{high} of {spec.name} must be above its {low}, "
                f"{ctx.source(nodes[low].span)}, not {ctx.source(span)}",  # type: ignore[attr-defined]  # as above
                span,
            )
            ok = False
    return ok


def _entries(value: Given) -> list[float]:
    """A given number, or the numbers of a list of them, one per coordinate."""
    return [value] if isinstance(value, float) else [v for v in value if isinstance(v, float)]


def _check_given_draw(
    ctx: Context, decl: ast.MorphismDecl, spec: Family, values: dict[str, Given], cod: Product
) -> bool:
    """A draw with the given parameters must be a value of the codomain: each coordinate
    for a number family (its support, bounds given, fits each factor), the whole of a
    one-object codomain for a vector family. False after an error, reported."""
    span = decl.family.span  # type: ignore[union-attr]  # a kernel with a family
    name = decl.name.text
    support = given_support(spec, values)
    if spec.event_rank == 1:
        shapes = {
            k: ((len(v), len(v[0])) if isinstance(v[0], tuple) else (len(v),))
            for k, v in values.items()
            if isinstance(v, tuple)
        }
        try:
            (size,) = spec.event_shape(shapes, cod.width)
        except ValueError:
            size = cod.width
        if len(cod.factors) != 1 or size != cod.width:
            ctx.report(
                rules.FAMILY_CODOMAIN,
                f"a draw of {spec.name} here is one vector of {size}, so the codomain of "
                f"morphism {name} must be one object of {size}, not {cod.label} "
                f"({dims_text(cod)})",
                span,
            )
            return False
        support = support.entry  # a vector of real (or positive) entries fits a Real object
    if all(support.fits(f.kind, f.size) for f in cod.factors):
        return True
    ctx.report(
        rules.FAMILY_CODOMAIN,
        f"{spec.name} here draws {support.describe()}, but morphism {name} has codomain "
        f"{cod.label} ({dims_text(cod)})",
        span,
    )
    return False


# ------------------------------------------- family arguments (morphisms and steps alike)


def number_text(v: float) -> str:
    """A number as a message shows it: `2`, `0.5`."""
    return str(int(v)) if float(v).is_integer() else repr(v)


def spread_entries(ctx: Context, family: Family, positional: Sequence[object]) -> Sequence[object]:
    """The positional arguments with a vector parameter's entries, written one by one
    (`Dirichlet(1.0, 2.0, 3.0)`), gathered into the one list they spread."""
    schema = family.params
    if (
        len(schema) == 1
        and schema[0].rank >= 1
        and len(positional) > 1
        and all(isinstance(a, ast.Literal) for a in positional)
    ):
        items: tuple[ast.Literal, ...] = tuple(positional)  # type: ignore[arg-type]  # checked
        return [ast.ListArg(items, ctx.lines.span(items[0].span.start, items[-1].span.end))]
    return positional


def report_binding(ctx: Context, family: Family, why: str, span: Span) -> None:
    """What `bind` says of a family's arguments, with the family's signature unless the
    message shows it already."""
    sig = family.signature()
    ctx.report(rules.FAMILY_ARGUMENTS, why if sig in why else f"{why}: {sig}", span)


def report_constraint(ctx: Context, family: Family, param: Param, written: str, span: Span) -> None:
    """A value outside its parameter's constraint (`HalfCauchy(-1.0)`)."""
    ctx.report(
        rules.ARGUMENT_CONSTRAINT,
        f"{param.name} of {family.name} must be {param.constraint.describe()}, not {written}",
        span,
    )
