"""What the checker says a model program is, against what its compiled program does.

`agreement(checked, name)` compiles the checker's `Model`, runs it forward on data
made from the data variables' checked types, and lists every way the two disagree:
the sites sampled and scored, their shapes (plates, then one draw's event axes),
the data names and their order, each site's support, and the diagram's site nodes.
An empty list is one model.
"""

from __future__ import annotations

import torch

from qvr_core.check.model import Model, Site
from qvr_core.check.module import CheckedModule
from qvr_core.graph.build import build_graph, graph_nodes
from qvr_core.graph.nodes import NodeKind
from qvr_core.runs.synthesise import numbers_read, times_read
from qvr_core.runtime.distributions import torch_constraint
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model import ModelProgram, ModelRun, compile_model

#: The number of rows given to an axis only the data sizes.
DATA_ROWS = 3


def expanded_sites(
    checked: CheckedModule, model: Model, prefix: str = ""
) -> list[tuple[str, Site]]:
    """The checker's sites as the run names them: a template's under `v$`, no scopes."""
    out: list[tuple[str, Site]] = []
    for s in model.sites:
        if s.kind == "marginalize":
            continue
        if s.callee is None:
            out.append((prefix + s.name, s))
        else:
            out += expanded_sites(checked, checked.models[s.callee], f"{prefix}{s.name}$")
    return out


def synthetic_data(checked: CheckedModule, model: Model) -> dict[str, torch.Tensor]:
    """A value for every data name from its checked type: indices within their plate,
    positive numbers elsewhere. An axis only the data sizes gets the plates of the first
    site that reads the name (directly or through lets), as a data file would."""
    sizes = {n: o.size for n, o in checked.objects.items() if o.size > 0}
    reads: dict[str, set[str]] = {}  # a let's name -> the names it reads, transitively
    consumer: dict[str, tuple[int, ...]] = {}
    for step in model.steps:
        names: set[str] = set()
        for n in step.reads():
            names |= {n} | reads.get(n, set())
        if isinstance(step, Site):
            plates = step.over if step.kind == "marginalize" else step.plates
            shape = tuple(sizes.get(p, DATA_ROWS) for p in plates if sizes.get(p) != 1)
            for n in names:
                consumer.setdefault(n, shape)
        reads[step.name] = names
    out: dict[str, torch.Tensor] = {}
    for p in model.params:
        out[p.name] = torch.tensor(1.0)
    for d in model.data:
        if d.observed:
            continue
        t = d.type
        shape: list[int] = []
        if t is not None:
            shape += [sizes.get(p.name, DATA_ROWS) for p in t.plates if sizes.get(p.name) != 1]
            if t.data_plates and not t.plates and d.name not in numbers_read(model):
                shape += consumer.get(d.name, (DATA_ROWS,))  # a recurrence's start: a number
            shape += [n if n >= 0 else DATA_ROWS for n in t.element.event]
        if d.name in times_read(model):  # an ODE's output times: its rows, increasing
            out[d.name] = torch.arange(1.0, consumer.get(d.name, (DATA_ROWS,))[0] + 1.0)
        elif d.indexes is not None:
            out[d.name] = torch.randint(0, sizes.get(d.indexes, DATA_ROWS), tuple(shape))
        else:
            # whole and positive: counts, scales and probabilities built from data stay valid
            out[d.name] = torch.ones(tuple(shape))
    return out


def agreement(checked: CheckedModule, name: str) -> list[str]:
    """Every disagreement between the checker's model `name` and its compiled program."""
    model = checked.models[name]
    program = compile_model(checked, name)
    sizes = {n: o.size for n, o in checked.objects.items() if o.size > 0}
    problems: list[str] = []
    sites = expanded_sites(checked, model)
    want_data = [p.name for p in model.params] + [d.name for d in model.data if not d.observed]
    if list(program.data_names) != list(dict.fromkeys(want_data)):
        problems.append(f"data names {program.data_names} != checker's {want_data}")
    if list(program.site_names) != [n for n, _ in sites]:
        problems.append(f"sites {program.site_names} != checker's {[n for n, _ in sites]}")
    drawn = build_graph(checked, name)
    nodes = [
        node.label
        for node in graph_nodes(drawn)
        if node.kind in (NodeKind.SAMPLE, NodeKind.OBSERVE)
    ]
    if sorted(nodes) != sorted(s.name for s in model.sites):
        problems.append(
            f"the diagram's sites {nodes} != the checker's {[s.name for s in model.sites]}"
        )
    static = {n: program.site_event_shape(n) for n, _ in sites}  # before any run
    try:
        run = _forward(program, synthetic_data(checked, model), _read_early(model, sizes))
    except InvalidDraws:
        if problems:
            return problems
        raise
    if set(run.values) != {n for n, _ in sites}:
        problems.append(f"the run sampled {sorted(run.values)}, the checker has {sites}")
    scored = {n for n, _ in sites} | {s.name for s in model.steps if s.kind == "score"}
    scored |= {s.name for s in model.sites if s.kind == "marginalize"}
    if not {n for n, _ in sites} <= set(run.log_probs) <= scored | _template_terms(checked, model):
        problems.append(f"the run scored {sorted(run.log_probs)}, the checker has {sorted(scored)}")
    for n, shape in static.items():
        got = run.values.get(n)
        if shape is not None and got is not None and tuple(got.shape) != shape:
            problems.append(f"{n}: the run drew shape {tuple(got.shape)}, statically {shape}")
    for n, site in sites:
        value = run.values.get(n)
        if value is None or site.type is None or "$" in n:
            continue  # a template's plates are the caller's objects: checked in its own run
        if not site.type.data_plates and all(p.size >= 0 for p in site.type.plates):
            plates = [sizes[p.name] for p in site.type.plates if sizes[p.name] != 1]
            event = list(site.type.element.event)
            got = list(value.shape)
            if got[: len(plates)] != plates or (
                all(e >= 0 for e in event) and got[len(plates) :] != event
            ):
                problems.append(f"{n}: shape {tuple(got)}, the checker has {site.type.label}")
        assert site.support is not None  # a family's site: the registry's, or its constraint=
        ran = program._constraints.get(n)
        try:
            static = torch_constraint(site.support)
        except (ValueError, AssertionError):
            static = None
        if ran is not None and static is not None and type(_base(ran)) is not type(_base(static)):
            problems.append(f"{n}: support {ran} at run time, the checker's {static}")
        if ran is not None and ran.is_discrete != site.type.element.discrete:
            problems.append(f"{n}: discrete {ran.is_discrete} != checker's {site.type.label}")
    return problems


class InvalidDraws(Exception):
    """Every seed's prior draws give a family arguments outside its range: the program
    itself is ill-posed there (a Normal draw used as a probability), so a forward run
    says nothing about the checker and the runtime; the static comparisons still ran."""


def _read_early(model: Model, sizes: dict[str, int]) -> dict[str, torch.Tensor]:
    """Observations for the observed sites a let reads before their `observe` (GARCH's
    y[t - 1] in y's scale): a forward run cannot draw those, it is given them (ones)."""
    bound: set[str] = set()
    early: dict[str, torch.Tensor] = {}
    sites = {s.name: s for s in model.sites if s.kind == "observe"}
    for step in model.steps:
        for n in step.reads():
            if n in sites and n not in bound and n not in early:
                shape = tuple(sizes.get(p, DATA_ROWS) for p in sites[n].plates if sizes.get(p) != 1)
                early[n] = torch.ones(shape, dtype=torch.float64)
        bound.add(step.name)
    return early


def _forward(
    program: ModelProgram,
    data: dict[str, torch.Tensor],
    given: dict[str, torch.Tensor] | None = None,
) -> ModelRun:
    """A forward run (`given`: observations it cannot draw); a few seeds, since a prior
    draw can leave a family's valid range (a HalfCauchy scale of 1e30 under a sigmoid)
    where the program is not at fault."""
    for seed in range(5):
        torch.manual_seed(seed)
        try:
            with torch.no_grad():
                return program.run(data, given or None)
        except QvrRuntimeError as e:
            if "outside what it allows" not in str(e):
                raise
            if seed == 4:
                raise InvalidDraws(str(e)) from e
    raise AssertionError("unreachable")


def _base(c: object) -> object:
    return getattr(c, "base_constraint", c)


def _template_terms(checked: CheckedModule, model: Model, prefix: str = "") -> set[str]:
    out: set[str] = set()
    for s in model.steps:
        if isinstance(s, Site) and s.callee is not None:
            inner = checked.models[s.callee]
            p = f"{prefix}{s.name}$"
            out |= {p + t.name for t in inner.steps if t.kind in ("score", "marginalize")}
            out |= _template_terms(checked, inner, p)
    return out
