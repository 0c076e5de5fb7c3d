"""What every export reads: one checked model program, its plates, its data, its problems.

`make_plan(module, program, source)` gathers from the checked module what a
writer of Stan, NumPyro or PyMC needs that the `Model` does not say in one place
(the syntax tree is read only to point at a program the checker did not type):
the size of every plate the model's values run over, each data variable with its
axes and whether it holds integers, and the plate a data-sized axis lines up with
(`x` in `let mu = alpha + beta * x` is read by `observe y : Row`, so its rows are
Row's). What no target can express yet (a draw from another program, a program
of morphisms, what the runtime refuses too) comes back as `Unsupported`
problems, located at the construct.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from qvr_core.check.model import Let, Model, Site
from qvr_core.check.module import CheckedModule
from qvr_core.check.rows import data_rows
from qvr_core.check.types import Element
from qvr_core.export.targets import Target
from qvr_core.host.version import installed_version
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.span import Span


@dataclass(frozen=True)
class Unsupported:
    """A construct a target cannot express: where it is written and why, in one sentence."""

    span: Span
    message: str


#: Why no target writes quivers' `factor` expression or `map(xs, x -> body)` yet (each
#: would build its table entry by entry; qvr's runtime runs it): the one sentence all
#: three say at it.
NOT_EXPORTED_FACTOR = (
    "a `factor` or `map` expression is not exported yet (qvr runs it): write its entries as "
    "arithmetic over the plates to export the program"
)

#: Why no target writes quivers' `fold(xs, init, acc -> x -> body)` yet (each would need
#: a loop carrying the accumulator; qvr's runtime runs one): the sentence all three say.
NOT_EXPORTED_FOLD = (
    "a `fold` is not exported yet (qvr runs it as a loop over its collection's first "
    "plate): write its steps as arithmetic to export the program"
)


@dataclass(frozen=True)
class Plate:
    """A finite set the model's values run over; `size` None: the data fixes it at fit time."""

    name: str
    size: int | None


@dataclass(frozen=True)
class Data:
    """A name bound from the data file, as an export declares it.

    `plates` are its known axes, outermost first; `rows` the plate its data-sized
    axis lines up with (None when no site over a plate reads it, or when the checker
    knows all its axes). `indexes` names the plate an index variable points into: qvr
    reads indices from 0, and an export reads the same data file unchanged.
    """

    name: str
    span: Span
    observed: bool
    element: Element
    plates: tuple[str, ...]
    rows: str | None
    indexes: str | None

    @property
    def integer(self) -> bool:
        return self.indexes is not None or self.element.discrete

    @property
    def axes(self) -> tuple[str, ...]:
        """Every axis of one value, outermost first: the rows' plate, then its own."""
        return ((self.rows,) if self.rows is not None else ()) + self.plates


@dataclass(frozen=True)
class Plan:
    """One model program ready to be written in another language."""

    module: CheckedModule
    model: Model
    source: str  # the source's name as given; the header writes it escaped (`shown_source`)
    plates: Mapping[str, Plate]  # every plate the model uses, in first-use order
    data: tuple[Data, ...]
    rows: Mapping[str, str]  # a let over data-sized rows -> the plate they line up with

    def header(self, target: Target) -> str:
        """The comment lines that open an exported file: which qvr, which source, which program."""
        c = target.comment
        return (
            f"{c} {target.title} code for the QVR program `{self.model.name}` in "
            f"{shown_source(self.source)},\n"
            f"{c} exported by qvr {installed_version()} (`qvr export --to {target.name}`).\n"
            f"{c} Export again after editing the QVR source rather than editing this file.\n"
        )

    @property
    def sizes(self) -> dict[str, int]:
        """Each plate's size where the checker knows it (the module's objects)."""
        return {n: o.size for n, o in self.module.objects.items() if o.size > 0}

    def datum(self, name: str) -> Data | None:
        return next((d for d in self.data if d.name == name), None)

    def step(self, name: str) -> Site | Let | None:
        return next((s for s in self.model.steps if s.name == name), None)

    def axes(self, name: str) -> tuple[str, ...]:
        """The plates a value named `name` runs over, outermost first (rows resolved)."""
        d = self.datum(name)
        if d is not None:
            return d.axes
        s = self.step(name)
        if s is None or s.type is None:
            return ()
        plates = tuple(p.name for p in s.type.plates)
        rows = self.rows.get(name) if isinstance(s, Let) else None
        if s.type.data_plates and rows is not None and rows not in plates:
            return (rows, *plates)
        return plates


#: What a source's name keeps as it is in an export, besides ASCII letters, digits and
#: `_.-~`: characters that mean nothing in a comment or a string of any target.
_PLAIN = " +,;:=!@&()[]<>"


def shown_source(source: str) -> str:
    """`source` as an export may write it in a comment or a docstring: every other
    character as `%XX`, its UTF-8 bytes as a URL writes them (a lone surrogate as its
    escape). A file's name is text from outside the program: a line break would end
    the comment and start a line of code, a quote or backslash would end or bend the
    docstring, `*/` a block comment, so none of them (nor any control or non-ASCII
    character) ever reaches the generated code as it is."""
    return quote(source, safe=_PLAIN, errors="backslashreplace")


def make_plan(module: CheckedModule, program: str, source: str) -> Plan | list[Unsupported]:
    """The plan of `program`, or the problems that stop every target from writing it."""
    model = module.models.get(program)
    if model is None:
        return [_not_a_model(module, program)]
    problems = _problems(model)
    if problems:
        return problems
    rows = data_rows(model)
    plates: dict[str, Plate] = {}

    def note(plated: object) -> None:
        for p in getattr(plated, "plates", ()):
            if p.name not in plates:
                fixed = p.name in module.objects and p.size > 0
                plates[p.name] = Plate(p.name, p.size if fixed else None)

    for step in model.steps:
        note(step.type)
        if not isinstance(step, Site):
            continue
        # the axes of one draw (`Dirichlet(1.0) [over=Symbol]`) and the set a summed-out
        # coordinate ranges over are sizes a target declares too
        of = step.type.element.of if step.type is not None else None
        for name in (*step.over, *((of,) if of is not None else ())):
            if name in module.objects and name not in plates:
                plates[name] = Plate(name, module.objects[name].size)
    for d in model.data:
        note(d.type)
    data = []
    for d in model.data:
        element = d.type.element if d.type is not None else Element("real")
        own = tuple(p.name for p in d.type.plates) if d.type is not None else ()
        row = rows.get(d.name) if d.type is None or d.type.data_plates else None
        data.append(Data(d.name, d.span, d.observed, element, own, row, d.indexes))
    for r in rows.values():
        if r not in plates and r in module.objects:
            plates[r] = Plate(r, module.objects[r].size)
    return Plan(module, model, source, plates, tuple(data), rows)


def _problems(model: Model) -> list[Unsupported]:
    out: list[Unsupported] = []
    if model.params:
        names = ", ".join(f"`{p.name}`" for p in model.params)
        out.append(
            Unsupported(
                model.decl.name.span,
                f"a program with parameters ({names}) is a template other programs call; "
                "export a program that fixes them",
            )
        )
    for gap in model.runtime_gaps:
        out.append(Unsupported(model.decl.name.span, f"qvr cannot run this program yet: {gap}"))
    for step in model.steps:
        if isinstance(step, Site) and step.constraint is not None and len(step.plates) > 1:
            out.append(
                Unsupported(
                    step.constraint_span,
                    f"constraint={step.constraint.kind} over {len(step.plates)} plates (a row "
                    "ordered per entry of the others) is not exported yet: the export writes "
                    f"one vector, Stan's {step.constraint.kind}[K], over one plate",
                )
            )
        program = step.callee if isinstance(step, Site) else None
        if program is not None:
            out.append(
                Unsupported(
                    step.step.span,
                    f"a draw through another program (`{program}`) is not exported yet: "
                    "write its steps in this program",
                )
            )
    return out


def _not_a_model(module: CheckedModule, name: str) -> Unsupported:
    info = module.programs.get(name)
    let = module.lets.get(name)
    span = info.decl.name.span if info is not None else (let.decl.name.span if let else None)
    if span is None:  # declared, but the checker did not type it (its rule says why)
        decl = next(
            (
                d
                for d in module.ast.decls
                if isinstance(d, ast.ProgramDecl | ast.LetDecl) and d.name.text == name
            ),
            None,
        )
        where = decl.name.span if decl is not None else Span(0, 0, 0, 0, 0, 0)
        return Unsupported(
            where,
            f"the checker did not type `{name}` ({rules.NOT_CHECKED.code}), "
            "so there is no model to export",
        )
    return Unsupported(
        span,
        f"`{name}` is a program of morphisms (a network trained by SVI), not a Bayesian "
        "model of sample/observe steps: only models export",
    )
