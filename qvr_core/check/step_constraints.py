"""A `sample` step's `[constraint=...]`: Stan's `ordered[K]` and `positive_ordered[K]`.

`sample mu : Component <- Normal(0.0, 2.0) [constraint=ordered]` puts the value in the
set of strictly increasing vectors along its last plate (`positive_ordered`: positive and
strictly increasing), as Stan's `ordered[2] mu; mu ~ normal(0, 2);` does. The density is
the family's own, not renormalised over the set, so the option only makes sense where the
family's density is defined on all of it and the value is a vector of numbers: a
continuous number family whose support holds the set, on a latent with a plate to order
along. Everything else is a located error here, so the runtime and the exports read the
checked `Site.constraint` and never decide again whether it applies.
"""

from __future__ import annotations

from qvr_core.builtins import Family
from qvr_core.builtins.constraints import STEP_CONSTRAINTS, Constraint
from qvr_core.check.context import Context
from qvr_core.check.types import Plated
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span

#: The values `constraint=` takes, in the order completion offers them.
CONSTRAINT_VALUES = tuple(STEP_CONSTRAINTS)


def constraint_word(
    ctx: Context, option: ast.Option, values: tuple[object, ...], kind: str
) -> str | None:
    """The set `constraint=` names, or None after a located error: only a `sample` step's
    value is a latent that a set can hold (an observe's is data, a marginalize's summed
    out), and the value is one of `CONSTRAINT_VALUES` (a misspelling gets the close ones)."""
    if kind != "sample":
        values_are = "an observe step are data" if kind == "observe" else "a marginalize summed out"
        ctx.report(
            rules.OPTION_NOT_APPLICABLE,
            "constraint= puts a latent's value in a set (Stan's ordered[K]); the values of "
            f"{values_are}, not a latent",
            option.span,
        )
        return None
    value = values[0] if len(values) == 1 else None
    word = str(value.value) if isinstance(value, ast.Literal) else None
    if word in STEP_CONSTRAINTS:
        return word
    span = value.span if isinstance(value, ast.Literal) else option.span
    ctx.did_you_mean(
        rules.INVALID_OPTION_VALUE,
        f"constraint={word or ctx.source(span)} is not a constraint",
        span,
        word or "",
        CONSTRAINT_VALUES,
        otherwise=f": use one of {', '.join(CONSTRAINT_VALUES)}",
    )
    return None


def value_constraint(
    ctx: Context, word: str, at: Span, family: Family, name: str, t: Plated
) -> Constraint | None:
    """The checked constraint `word` of site `name` (a draw of `family`, of type `t`), or
    None after a located error at the option (`at`) saying why it cannot hold."""
    why = _family_refusal(word, family) or _plate_refusal(word, name, t)
    if why is not None:
        ctx.report(rules.OPTION_NOT_APPLICABLE, why, at)
        return None
    return Constraint(word)


def _family_refusal(word: str, family: Family) -> str | None:
    """Why `family`'s draws cannot be held to `word`: its density is scored at the ordered
    value, so it must be a number family defined on every number of the set."""
    support = family.support
    fits = (
        family.event_rank == 0
        and not family.dirac
        and not support.discrete
        and support.kind in STEP_CONSTRAINTS[word]
    )
    if fits:
        return None
    wanted = "real numbers" if word == "ordered" else "real or positive numbers"
    return (
        f"constraint={word} orders the numbers a family draws, so it needs a continuous "
        f"family over {wanted}, and {family.name} draws {support.describe()}"
    )


def _plate_refusal(word: str, name: str, t: Plated) -> str | None:
    """Why `name`'s value has no axis to order along: it orders each row along the last
    plate, so there must be one, of a declared object, with more than one entry (a plate
    of one entry lays out no axis)."""
    if t.data_plates:
        return (
            f"constraint={word} orders '{name}' along its last plate, and its rows are the "
            "data's, whose number the program does not fix"
        )
    if not t.plates:
        return (
            f"constraint={word} orders '{name}' along its last plate, and it has none: write "
            f"the plate to order along (`sample {name} : K <- ...`)"
        )
    last = t.plates[-1]
    if last.size == 1:
        return (
            f"constraint={word} orders '{name}' along its last plate, and {last.name} has one "
            "entry: there is nothing to order"
        )
    return None
