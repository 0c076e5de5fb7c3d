"""What minibatch SVI needs to subsample one plate of a checked model, without torch.

Subsampling a plate (Pyro's `plate(..., subsample_size=B)`) runs the model on B of
its N rows and scales the log-density terms over the plate by N/B, which is an
unbiased estimate of the full log density only when every value over the plate
stays per row: nothing sums, gathers or mixes across the plate's rows, and no
log-sum-exp of a marginalised coordinate runs over rows it does not group by. This
module decides that from the `Model` alone and says, for a program it accepts,
which data to slice along which axis, which terms to scale and which latent sites
are local to the plate (a guide fits them per row); otherwise it names the step at
fault and what to change. The runtime reads the plan and re-derives nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from qvr_core.builtins import FUNCTIONS
from qvr_core.check.model import Argument, DataVariable, Let, Model, Site, Step
from qvr_core.check.module import CheckedModule, SymbolKind
from qvr_core.check.rows import data_rows, data_sized, is_data_sized
from qvr_core.check.terms import Call, Comprehension, Fold, Gather, refs, subterms
from qvr_core.check.types import Plated

#: The end of every refusal of a value that does not stay per row.
_PER_ROW = "a subsampled plate must stay per row"


@dataclass(frozen=True)
class SubsamplePlan:
    """How to run a model on a minibatch of one plate's rows.

    `data_axes`: every data variable (observed ones too) with rows on the plate ->
    the axis of the plate in its value, the axis a minibatch slices. `scaled`: the
    log-density terms over the plate, each scaled by N/B: top-level sample/observe
    sites and score lets, and top-level marginalize scopes (by the marginalize's
    name) grouped by the plate. `local`: latent `sample` sites over the plate that a
    guide fits (not summed out exactly) -> the axis of the plate in their value, so
    the guide's parameters for them are sliced with the data.
    """

    plate: str
    size: int
    data_axes: Mapping[str, int]
    scaled: frozenset[str]
    local: Mapping[str, int]


@dataclass(frozen=True)
class Refusal:
    """Why the program cannot be subsampled on the plate: one line saying what to
    change, and the 1-based source line of the step at fault when one is."""

    message: str
    line: int | None


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def subsample_plan(module: CheckedModule, program: str, plate: str) -> SubsamplePlan | Refusal:
    """The plan for subsampling `plate` in `program`, or the first reason it cannot be."""
    try:
        model = _model(module, program)
        size = _size(module, model, plate)
        return _Walk(module, model, plate, size).plan()
    except _Refused as e:
        return e.refusal


def _refuse(message: str, line: int | None) -> _Refused:
    return _Refused(Refusal(f"line {line}: {message}" if line is not None else message, line))


def _model(module: CheckedModule, program: str) -> Model:
    model = module.models.get(program)
    if model is not None:
        return model
    info = module.programs.get(program)
    if info is not None:
        raise _refuse(
            f"`{program}` is a program of morphisms, not a model of sample/observe steps: "
            "only a model's plates can be subsampled",
            info.decl.span.start_line + 1,
        )
    raise _refuse(f"`{program}` is not a model program of this module", None)


def _size(module: CheckedModule, model: Model, plate: str) -> int:
    """The plate's size N, when it is a FinSet object of fixed size > 1 an observed
    site runs over (else nothing of the data is left out by subsampling it)."""
    obj = module.objects.get(plate)
    symbol = module.symbols.lookup(plate)
    line = symbol.span.start_line + 1 if symbol and symbol.kind is SymbolKind.OBJECT else None
    if obj is None or not obj.discrete:
        raise _refuse(
            f"`{plate}` is not a FinSet object of this module; subsample a plate the "
            "observed sites run over",
            line,
        )
    if obj.size <= 0:
        raise _refuse(f"`{plate}` has no fixed positive size; declare `{plate} : FinSet N`", line)
    if obj.size == 1:
        raise _refuse(
            f"`{plate}` has one entry, so a minibatch of it is all of it; subsample a larger plate",
            line,
        )
    if not any(s.kind == "observe" and plate in _plates_of(s) for s in model.sites):
        raise _refuse(
            f"no observed site runs over {plate}; subsample a plate an `observe` step runs over",
            model.line,
        )
    return obj.size


def _plates_of(site: Site) -> tuple[str, ...]:
    """A site's batch plates and the plates of its value (a marginalize's are its groups)."""
    own = tuple(p.name for p in site.type.plates) if site.type is not None else ()
    return tuple(dict.fromkeys((*site.plates, *own)))


def _show(step: Step) -> str:
    return (
        f"`{step.kind} {step.name} = ...`"
        if isinstance(step, Let)
        else f"`{step.kind} {step.name}`"
    )


class _Walk:
    """One pass over the steps in source order: which values run over the plate, and
    the first step that breaks per-row independence."""

    def __init__(self, module: CheckedModule, model: Model, plate: str, size: int) -> None:
        self.module = module
        self.model = model
        self.plate = plate
        self.size = size
        self.rows = data_rows(model)
        self.sized = data_sized(model)
        self.over: dict[str, Plated | None] = {}  # each value over the plate -> its type

    def plan(self) -> SubsamplePlan:
        model, plate = self.model, self.plate
        for step in model.steps:
            callee = step.called or (step.callee if isinstance(step, Site) else None)
            if isinstance(step, Site) and callee is not None:
                raise _refuse(
                    f"{_show(step)} draws through another program (`{callee}`); write its "
                    f"steps in this program to subsample {plate}",
                    step.line,
                )
        if model.runtime_gaps:  # each says its line first when it has one
            gap = model.runtime_gaps[0]
            at = re.match(r"line (\d+): ", gap)
            line = int(at.group(1)) if at else model.line
            raise _refuse(
                f"qvr cannot run `{model.name}` yet: {gap[at.end() if at else 0 :]}", line
            )
        data_axes: dict[str, int] = {}
        for d in model.data:
            axis = self._data_axis(d)
            if axis is not None:
                data_axes[d.name] = axis
                self.over[d.name] = d.type
        for name in model.observed_lets:  # an observation computed from the data: its rows
            site = model.site(name)
            if site is not None and plate in _plates_of(site):
                data_axes[name] = self._site_axis(site)
        scaled: set[str] = set()
        local: dict[str, int] = {}
        for step in model.steps:
            if not self._step(step):
                continue
            self.over[step.name] = step.type
            top = not step.scope
            if isinstance(step, Let):
                if step.kind == "score" and top:
                    scaled.add(step.name)
                continue
            if top:
                scaled.add(step.name)
            if step.kind == "sample" and not step.summable:
                local[step.name] = self._site_axis(step)
        return SubsamplePlan(plate, self.size, data_axes, frozenset(scaled), local)

    def _data_axis(self, d: DataVariable) -> int | None:
        """The plate's axis in a data variable (rows the data sizes come first), None
        when it has no rows on the plate."""
        if self.rows.get(d.name) == self.plate:
            return 0
        own = tuple(p.name for p in d.type.plates) if d.type is not None else ()
        if self.plate not in own:
            return None
        if is_data_sized(d.type) and d.name not in self.rows:
            raise _refuse(
                f"the data `{d.name}` runs over {self.plate} after rows the data sizes that "
                f"no one plate lines up with, so {self.plate}'s axis in it is unknown; read "
                "it from sites over one plate",
                d.span.start_line + 1,
            )
        lead = 1 if is_data_sized(d.type) else 0
        return lead + self._axis_in(own, d.span.start_line + 1, d.name)

    def _step(self, step: Step) -> bool:
        """Whether the step's value runs over the plate; refuses a step that reads a
        value over the plate without staying per row."""
        plate = self.plate
        if isinstance(step, Let):
            over = (step.type is not None and plate in (p.name for p in step.type.plates)) or (
                self.rows.get(step.name) == plate
            )
        else:
            over = plate in _plates_of(step)
            if plate in step.over and plate not in step.plates:
                raise _refuse(
                    f"one draw of {_show(step)} spans {plate} (`over={plate}`), so its rows "
                    f"are not independent; {_PER_ROW}",
                    step.line,
                )
        read = [n for n in step.reads() if n in self.over]
        if read and not over:
            how = f"reduces over {plate}'s rows"
            if _picks(step, read[0], self.module.objects):
                how = f"picks {plate}'s rows of `{read[0]}` by index"
            raise _refuse(
                f"{_show(step)} {how} (it reads `{read[0]}`, which runs over {plate}, and is "
                f"not over {plate} itself); {_PER_ROW}",
                step.line,
            )
        if not over:
            return False
        for name in step.reads():
            if name in self.sized and self.rows.get(name) != plate:
                raise _refuse(
                    f"{_show(step)} reads `{name}`, whose rows the data sizes and no site lines "
                    f"up with {plate} alone; read it only from sites over {plate}",
                    step.line,
                )
        if isinstance(step, Let):
            self._term(step)
        else:
            for a in step.args:
                self._gather(step, a)
        if step.scope and (isinstance(step, Site) or step.kind == "score"):
            outer = self.model.site(step.scope[0])
            if outer is None or plate not in outer.plates:
                raise _refuse(
                    f"{_show(step)} runs over {plate} inside `marginalize {step.scope[0]}`, "
                    f"which does not group by {plate}, so its rows are summed inside one "
                    f"log-sum-exp; give the marginalize `over={plate}` or subsample another "
                    "plate",
                    step.line,
                )
        return True

    def _term(self, let: Let) -> None:
        """Refuses a reduction, a gather or a last-axis function across the plate's rows
        inside a let that stays over the plate (`y - mean(y)`, `softmax(y)`)."""
        plate = self.plate
        for t in subterms(let.term):
            if isinstance(t, Call):
                fn = FUNCTIONS.get(t.fn)
                if fn is None:
                    continue
                reads = [n for a in t.args for n in refs(a) if n in self.over]
                if not reads:
                    continue
                reduces = fn.shape == "reduce" or (fn.reduces_alone and len(t.args) == 1)
                if reduces and (t.axis is None or self._may_be_axis(reads[0], t.axis)):
                    raise _refuse(
                        f"{_show(let)} reduces over {plate}'s rows (`{t.fn}` of `{reads[0]}`); "
                        f"{_PER_ROW}",
                        let.line,
                    )
                if fn.shape in ("rowwise", "series") and any(
                    self._last_may_be_plate(n) for n in reads
                ):
                    raise _refuse(
                        f"{_show(let)} mixes {plate}'s rows (`{t.fn}` runs along the last "
                        f"axis of `{reads[0]}`, which is {plate}); {_PER_ROW}",
                        let.line,
                    )
            elif isinstance(t, Gather) and t.base in self.over:
                for i, index in enumerate(t.indices):
                    on = t.plates[i] if i < len(t.plates) else None
                    if index is not None and self._indexes_plate(t.base, i, on):
                        raise _refuse(
                            f"{_show(let)} picks {plate}'s rows of `{t.base}` by index; {_PER_ROW}",
                            let.line,
                        )
            elif isinstance(t, Comprehension) and (
                plate in t.plates or any(n in self.over for n in refs(t))
            ):
                raise _refuse(
                    f"{_show(let)} builds a `factor` table entry by entry over every row of "
                    f"{plate}; {_PER_ROW}",
                    let.line,
                )
            elif isinstance(t, Fold) and (plate == t.plate or any(n in self.over for n in refs(t))):
                raise _refuse(
                    f"{_show(let)} runs a `fold` that carries its accumulator from one entry "
                    f"to the next over the rows of {plate}; {_PER_ROW}",
                    let.line,
                )

    def _gather(self, site: Site, a: Argument) -> None:
        """Refuses a site argument `theta[idx]` that picks the plate's rows by index."""
        if a.name is None or a.name not in self.over:
            return
        for i, index in enumerate(a.index):
            if index in self.module.objects:  # `sigma[School]`: every entry
                continue
            on = a.index_plates[i] if i < len(a.index_plates) else None
            if self._indexes_plate(a.name, i, on):
                raise _refuse(
                    f"{_show(site)} picks {self.plate}'s rows of `{a.name}` by `{index}`; "
                    f"{_PER_ROW}",
                    site.line,
                )

    def _indexes_plate(self, base: str, position: int, on: str | None) -> bool:
        if on is not None:
            return on == self.plate
        return self._may_be_axis(base, position)

    def _axes(self, name: str) -> tuple[list[str | None], tuple[int, ...]] | None:
        """A value's axes (plate names; None for rows the data sizes) and event shape,
        as the runtime lays them out; None when unknown (data the checker did not type)."""
        t = self.over.get(name)
        if t is None:
            return None
        sizes = [(p.name, p.size) for p in t.plates]
        axes: list[str | None] = [self.rows.get(name)] if t.data_plates else []
        axes += [n for n, s in sizes if s != 1]
        return axes, t.element.event

    def _may_be_axis(self, name: str, axis: int) -> bool:
        found = self._axes(name)
        if found is None:
            return True
        axes, event = found
        rank = len(axes) + len(event)
        if axis < 0:
            axis += rank
        return not 0 <= axis < rank or (axis < len(axes) and axes[axis] in (self.plate, None))

    def _last_may_be_plate(self, name: str) -> bool:
        found = self._axes(name)
        if found is None:
            return True
        axes, event = found
        return not event and bool(axes) and axes[-1] in (self.plate, None)

    def _site_axis(self, site: Site) -> int:
        """The plate's axis in a site's value (its type's plates, else its batch plates)."""
        plates = tuple(p.name for p in site.type.plates) if site.type is not None else site.plates
        if self.plate not in plates:  # a batch plate its value's type leaves out
            plates = _plates_of(site)
        return self._axis_in(plates, site.line, site.name)

    def _axis_in(self, plates: Sequence[str], line: int, name: str) -> int:
        """The axis of the plate in a value over `plates`: the plates before it, less
        those of one entry (which add no axis, as `families.axes` lays values out)."""
        n = 0
        for p in plates:
            if p == self.plate:
                return n
            obj = self.module.objects.get(p)
            if obj is None or obj.size <= 0:
                raise _refuse(
                    f"`{name}` runs over {p} before {self.plate}, and {p}'s size is the "
                    f"caller's, so {self.plate}'s axis in it is unknown; put {self.plate} first",
                    line,
                )
            if obj.size != 1:
                n += 1
        raise AssertionError(f"{self.plate} is not a plate of `{name}`")


def _picks(step: Step, name: str, objects: Mapping[str, object]) -> bool:
    """Whether the step gathers `name` by an index (`u[g]`) rather than reading it whole
    (`u[Row]`, every entry, is the whole value)."""
    if isinstance(step, Site):
        return any(a.name == name and any(i not in objects for i in a.index) for a in step.args)
    return any(
        isinstance(t, Gather) and t.base == name and any(i is not None for i in t.indices)
        for t in subterms(step.term)
    )
