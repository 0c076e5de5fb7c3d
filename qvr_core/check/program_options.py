"""A program's options: `[effects=[Sample, Score]]` and `[over=model]`.

quivers 0.25.2 (`dsl/compiler/programs.py`) accepts these two keys on a program and no
other (`check_option_keys`). `effects=` declares what the body may do: the body's
effects (a `sample` step is Sample, an `observe` Score, a `marginalize` Marginal, those
inside a marginalize's scope included) must be among those listed, and a program
declared `Pure` may do none (`_verify_effects`). `over=M` makes the program a posterior
block of the model M, which must be declared (it is registered among the posteriors
rather than the morphisms). The checker reports the same where they are written and
types the program as it types one without options.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from qvr_core.builtins.effects import PROGRAM_EFFECTS, PROGRAM_OPTIONS, PURE
from qvr_core.check.context import SymbolKey
from qvr_core.syntax import ast
from qvr_core.text import rules

if TYPE_CHECKING:
    from qvr_core.check.context import Context


def check_program_options(ctx: Context, decl: ast.ProgramDecl) -> None:
    name = decl.name.text
    for o in decl.options:
        key = o.key.text
        if key not in PROGRAM_OPTIONS:
            ctx.unknown_option(o.key, f"program {name}", PROGRAM_OPTIONS)
        elif key == "effects":
            _effects(ctx, decl, o)
        else:
            _over(ctx, decl, o)


def _words(o: ast.Option) -> list[ast.Literal] | None:
    v = o.value
    items = v.items if isinstance(v, ast.ValueList) else (v,) if v is not None else ()
    words = [i for i in items if isinstance(i, ast.Literal) and i.kind == "name"]
    return words if words and len(words) == len(items) else None


def _effects(ctx: Context, decl: ast.ProgramDecl, o: ast.Option) -> None:
    words = _words(o)
    if words is None:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"program {decl.name.text}'s effects are names: effects=[Sample, Score] or "
            "effects=Pure",
            o.span,
        )
        return
    declared = {w.raw for w in words}
    for w in words:
        if w.raw not in PROGRAM_EFFECTS:
            ctx.did_you_mean(
                rules.GRAMMAR_READ_OTHERWISE,
                f"'{w.raw}' is no effect a program body has ({', '.join(PROGRAM_EFFECTS)}): "
                "quivers accepts it and it allows nothing",
                w.span,
                w.raw,
                list(PROGRAM_EFFECTS),
            )
    for step, effect in _effects_of(decl.steps):
        if PURE in declared:
            ctx.report(
                rules.EFFECT_ROW,
                f"program {decl.name.text} is declared {PURE}, but this step is {effect}",
                step.span,
            )
        elif effect not in declared:
            ctx.report(
                rules.EFFECT_ROW,
                f"this step is {effect}, which program {decl.name.text}'s effects "
                f"({', '.join(sorted(declared))}) do not list",
                step.span,
            )


def _effects_of(steps: tuple[ast.Step, ...]) -> Iterator[tuple[ast.Step, str]]:
    """Each step with an effect, and the effect (scoped steps included)."""
    for step in steps:
        if isinstance(step, ast.SampleStep):
            yield step, "Sample"
        elif isinstance(step, ast.ObserveStep):
            yield step, "Score"
        elif isinstance(step, ast.MarginalizeStep):
            yield step, "Marginal"
            yield from _effects_of(step.steps)


def _over(ctx: Context, decl: ast.ProgramDecl, o: ast.Option) -> None:
    words = _words(o)
    if words is None or len(words) != 1:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            f"program {decl.name.text}'s over= names the model it is a posterior of",
            o.span,
        )
        return
    model = words[0]
    target = ctx.top.get(model.raw)
    if isinstance(target, ast.ProgramDecl | ast.MorphismDecl | ast.LetDecl):
        ctx.ref(model.span, SymbolKey(model.raw))
        return
    candidates = [
        n for n, d in ctx.top.items() if isinstance(d, ast.ProgramDecl | ast.MorphismDecl)
    ]
    ctx.did_you_mean(
        rules.UNDEFINED_NAME,
        f"program {decl.name.text} is a posterior block over '{model.raw}', which is no "
        "declared model",
        model.span,
        model.raw,
        candidates,
    )
