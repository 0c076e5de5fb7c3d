"""What a `contraction` declaration computes: its record and its einsum wiring.

`contraction NAME (p : A -> B, ...) : D -> C [rule=R, wiring="...", share=[...]]`
declares an n-ary contraction (quivers 0.25.2, `dsl/compiler/programs.py`
`_compile_contraction`, `core/wiring.py` `EinsumWiring`): the calls
`NAME(f, g, ...)` give the relation whose entries are the arguments' entries
combined by the rule's tensor and joined over the axes the output does not keep.

An axis is an object named in the signature (quivers' `_flatten_type_axes`: the
names as written, a product flattened). Without `wiring=` the wiring is inferred
(`_infer_wiring_from_signature`): one letter per distinct axis name in order of
first mention across the inputs; an axis in the output is kept; an axis in one
input only and neither in the output nor in `share=` cannot be placed. The
functions here are that logic without locations; `check/contractions.py` reports
what they refuse where it is written. The records hold no spans, so a frame the
incremental checker keeps can hold them however the text moves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qvr_core.check.types import Arrow

CONTRACTION = "contraction"  # the clause kind of the declaration
#: quivers' closed option set (0.25.2, `_CONTRACTION_OPTION_KEYS`).
CONTRACTION_OPTIONS = ("rule", "wiring", "share")
#: einsum's letters, which quivers assigns to the distinct axis names in order.
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Param:
    """One input of a contraction: its name, its type and its axes (object names as
    written, domain then codomain)."""

    name: str
    type: Arrow
    axes: tuple[str, ...]


@dataclass(frozen=True)
class Wiring:
    """An einsum wiring: one letter string per input, and the output's letters."""

    inputs: tuple[str, ...]
    output: str

    @property
    def spec(self) -> str:
        """As quivers writes the inferred spec (`ab, ac, bcd -> ad`)."""
        return f"{', '.join(self.inputs)} -> {self.output}"

    @property
    def contracted(self) -> str:
        """The letters joined away: in some input, not in the output (in first-mention
        order, as `EinsumWiring` reduces them)."""
        seen: dict[str, None] = {}
        for spec in self.inputs:
            for ch in spec:
                if ch not in self.output:
                    seen.setdefault(ch, None)
        return "".join(seen)


@dataclass(frozen=True)
class Contraction:
    """A checked `contraction`: what its calls compute, hover shows and the runtime reads.

    `rule` is the registry's name (`qvr_core.builtins.algebras.ALGEBRAS`, looked up
    lower-cased); `inferred` says whether the wiring came from the signature."""

    name: str
    rule: str
    params: tuple[Param, ...]
    type: Arrow
    wiring: Wiring
    inferred: bool

    def signature(self) -> str:
        inputs = ", ".join(f"{p.name} : {p.type.label}" for p in self.params)
        return f"{self.name}({inputs}) : {self.type.label}"

    def summary(self) -> str:
        """One paragraph: the signature, the rule and the wiring."""
        how = "inferred from the signature" if self.inferred else "written"
        axis = {
            ch: name
            for spec, p in zip(self.wiring.inputs, self.params, strict=True)
            for ch, name in zip(spec, p.axes, strict=True)
        }
        joined = [axis[ch] for ch in self.wiring.contracted]
        over = f"; joins over {', '.join(joined)}" if joined else "; joins over no axis"
        return (
            f"contraction {self.signature()} under {self.rule}; wiring `{self.wiring.spec}` "
            f"({how}){over}"
        )


def infer_wiring(
    inputs: Sequence[tuple[str, ...]], output: tuple[str, ...], shared: Sequence[str]
) -> Wiring | str:
    """The wiring quivers infers from a typed signature, or why it cannot be had.

    Letters go to the distinct axis names in order of first mention across the
    inputs; the output's letters follow its declared order. quivers raises for an
    axis in one input only that is neither kept nor shared; an output axis that no
    input has (a `KeyError` in 0.25.2) and an axis twice in one input (which
    `EinsumWiring` refuses: a diagonal) cannot be computed either.
    """
    kept = set(output) | set(shared)
    appearances: dict[str, int] = {}
    for axes in inputs:
        for axis in dict.fromkeys(axes):
            appearances[axis] = appearances.get(axis, 0) + 1
    lonely = sorted(a for a, n in appearances.items() if n == 1 and a not in kept)
    if lonely:
        which = ", ".join(lonely)
        return (
            f"the axes {which} appear in exactly one input and not in the output, so the "
            "inferred wiring cannot place them; add them to the output type, list them in "
            '`share=[...]`, or write the wiring (`wiring="..."`)'
        )
    letter: dict[str, str] = {}
    for axes in inputs:
        for axis in axes:
            if axis not in letter:
                if len(letter) == len(LETTERS):
                    return (
                        f"more than {len(LETTERS)} distinct axes, more than einsum has "
                        'letters; write the wiring (`wiring="..."`)'
                    )
                letter[axis] = LETTERS[len(letter)]
    missing = [a for a in output if a not in letter]
    if missing:
        return (
            f"the output axis {missing[0]} is in no input, so no input gives its entries; "
            "add an input over it or change the output type"
        )
    for axes in inputs:
        twice = next((a for a in axes if axes.count(a) > 1), None)
        if twice is not None:
            return (
                f"the axis {twice} is twice in one input ({' * '.join(axes)}): that is a "
                "diagonal, which quivers' einsum wiring does not compute"
            )
    twice = next((a for a in output if output.count(a) > 1), None)
    if twice is not None:
        return f"the axis {twice} is twice in the output, which einsum cannot give"
    return Wiring(
        tuple("".join(letter[a] for a in axes) for axes in inputs),
        "".join(letter[a] for a in output),
    )


def parse_wiring(text: str) -> Wiring | str:
    """An explicit `wiring="..."` as `EinsumWiring` reads it, or why it refuses it: a
    `->`, inputs split on commas (each stripped, none empty, no letter twice in one), an
    output without a repeated letter, every output letter in some input."""
    if "->" not in text:
        return f"the wiring {text!r} has no '->' (einsum's `ab, bc -> ac`)"
    lhs, rhs = text.split("->", maxsplit=1)
    inputs = tuple(s.strip() for s in lhs.split(","))
    output = rhs.strip()
    for i, spec in enumerate(inputs, start=1):
        if not spec:
            return f"input {i} of the wiring {text!r} has no axes"
        if len(set(spec)) != len(spec):
            return (
                f"input {i} of the wiring {text!r} repeats a letter ({spec}): a diagonal or "
                "trace, which quivers' einsum wiring does not compute"
            )
    if len(set(output)) != len(output):
        return f"the output {output!r} of the wiring {text!r} repeats a letter"
    given = set("".join(inputs))
    stray = next((ch for ch in output if ch not in given), None)
    if stray is not None:
        return f"the output letter {stray!r} of the wiring {text!r} is in no input"
    return Wiring(inputs, output)
