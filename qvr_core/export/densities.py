"""`log_prob(F(a, b), x)` of a computation (`terms.Density`) written in a target.

Each Python target already spells every family it writes as a distribution call
(`family_call`: NumPyro's `dist.StudentT(..)`, PyMC's `pm.StudentT.dist(..)`), the
same call its sites use, so a log density is that call scored at the value: the
family's meaning is written once per target, not again for `log_prob`.
"""

from __future__ import annotations

from collections.abc import Callable

from qvr_core.check.terms import Call

#: A target's distribution call of a family at argument texts by parameter, or None.
FamilyCall = Callable[[str, dict[str, str]], "str | None"]


def density_text(call: Call, texts: list[str], family_call: FamilyCall, scored: str) -> str | None:
    """The target's text of `call` (its value's text first in `texts`, then its
    arguments'): `scored` with `{dist}` the family's call and `{value}` the value; None
    where the target has no call of the family at those parameters."""
    assert call.density is not None
    args = dict(zip(call.density.params, texts[1:], strict=True))
    made = family_call(call.density.family, args)
    return None if made is None else scored.format(dist=made, value=texts[0])


def density_problem(call: Call, family_call: FamilyCall, target: str) -> str | None:
    """Why `call`'s log density is not written in `target`, or None where it is."""
    assert call.density is not None
    args = {p: p for p in call.density.params}
    if family_call(call.density.family, args) is not None:
        return None
    return (
        f"log_prob of {call.density.family} with the arguments "
        f"{', '.join(call.density.params)}: {target} has no distribution of the same "
        "parameterisation"
    )
