"""What a run of a model program will need in memory, from its checked `Model` alone.

`qvr run` sizes a model program (family steps, plates, `marginalize` scopes,
data names: `qvr_core.check.model`) before anything is compiled, allocated or
read, and refuses a run over the memory budget in one line naming the step
that needs the most, as it does a seed program (`qvr_core.sizing.resources`, whose
`Estimate` and `Need` this returns); the checker warns (QVR601) while the
user types. torch is not imported: sizes are Python integers however large.

How the model runtime lays a run out (`qvr_core.runtime.model`), and what is
counted for it (numbers are 8 bytes: a model program computes in float64):

- every site's value is one tensor over its plates (a one-entry object adds
  no axis) and the axes of one draw: its number of values is the product of
  their sizes; an axis only the data sizes counts the rows the data can hold;
- a log joint with gradients keeps, per value of a site, its log-density and
  the intermediates of its family's density (`GRAPH_BYTES`), and each step's
  torch and Python objects (`STEP_BYTES`; `OP_BYTES` per operation of a
  `let`);
- a `marginalize z : K` scope runs its body once per value of K, for every
  distinct value of the enumerated coordinates around it that its sum reads
  (the runtime reuses a sum for every path that agrees on those: a chain
  where each scope reads the one before costs K * K per level, one where the
  innermost step reads every coordinate K ** depth), and keeps each run's
  graph: nested scopes multiply;
- what the method keeps: SVI the guide's two parameters per latent value with
  their gradients and Adam's moments, and the `GUIDE_DRAWS` draws its summary
  is computed from; NUTS, in each chain, its working copies of the latent
  values and every kept draw (with the summary's float64 copies); prior
  sampling every site's draws. A run of `nuts` holds one program per chain.

Like `qvr_core.sizing.resources` it is an estimate of the peak, meant to tell a run
that fits from one that cannot (a billion-entry plate, a scope enumerated a
million times), within a small factor: `tests/resources/test_model_sizing.py`
holds it to measured runs. The runtime keeps a second guard at the
enumeration itself (`enumeration_bytes`), for a support only the data sizes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from qvr_core.builtins.objects import PLATE_KINDS
from qvr_core.check.model import Let, Model, Node, Site, Step
from qvr_core.check.terms import (
    Call,
    Comprehension,
    Fold,
    Gather,
    Num,
    Op,
    Ref,
    Stack,
    Term,
    Unary,
)
from qvr_core.check.types import Plated
from qvr_core.sizing.resources import Estimate, Need
from qvr_core.syntax import ast
from qvr_core.text.units import format_count

#: A model program's numbers are float64 (as Stan's), 8 bytes each.
FLOAT_BYTES = 8
# Measured on the model runtime (CPU, float32): see the module docstring.
#: Per value of a site in one log joint: its log-density and its density's intermediates.
GRAPH_BYTES = 32
#: Per evaluation of one family step: the distribution, its arguments, the graph's nodes.
STEP_BYTES = 6 << 10
#: Per operation of a `let` or `score` evaluated once (a gather, an operator, a call).
OP_BYTES = 1 << 10
#: Per value of an enumerated coordinate summed: its prior term, the scope's total.
EVALUATION_BYTES = 6 << 10
#: Floats per group kept per enumerated value: the total, the stacked terms, logsumexp's.
SCOPE_FLOATS = 4
#: Draws of the fitted guide the SVI summary keeps (`qvr_core.runs.methods.GUIDE_DRAWS`).
GUIDE_DRAWS = 200
#: SVI per latent value: the guide's location and scale with gradients and Adam's two
#: moments, one draw and its noise, and the summary's draws (a list, stacked, float64).
SVI_LATENT_BYTES = FLOAT_BYTES * 10 + GUIDE_DRAWS * (FLOAT_BYTES * 2 + 8)
#: NUTS per latent value and chain: position, momentum, gradients, the tree's ends.
NUTS_LATENT_BYTES = FLOAT_BYTES * 12
#: NUTS per latent value and kept draw: the draw, the samples table, the summary's ranks,
#: float64 copies and autocorrelations.
NUTS_DRAW_BYTES = 160
#: Prior sampling per value of a site and draw: the draw, stacked, the summary's float64.
PRIOR_DRAW_BYTES = FLOAT_BYTES * 4
#: Bytes of data per number it holds, at least (without its arrays' lengths, an axis only
#: the data sizes is counted as the data's size over this).
DATA_BYTES_PER_NUMBER = 8
#: Template calls are expanded up to the runtime's depth (`MAX_TEMPLATE_DEPTH`) and no
#: further than this many steps in all (what a keystroke may cost the checker).
MAX_TEMPLATE_DEPTH = 16
MAX_STEPS = 200_000


def enumeration_bytes(values: int, groups: int) -> int:
    """What one scope's sum keeps for `values` values of its coordinate over `groups`
    groups, before its body's steps (also the runtime's guard, `runtime.model.marginal`)."""
    return values * (EVALUATION_BYTES + max(groups, 1) * FLOAT_BYTES * SCOPE_FLOATS)


# ------------------------------------------------------------------ the steps, flat


@dataclass(frozen=True)
class _Item:
    """One step of the run, template calls expanded: its name (a template's `v$z`), the
    scopes around it (names as prefixed), the object sizes it sees and its declaration.
    A scope (`opens`: a `marginalize`, or a discrete latent NUTS and SVI sum out, `summed`)
    knows what it reads from outside itself (`outside`, its node's, prefixed)."""

    name: str
    step: Step
    scope: tuple[str, ...]
    reads: frozenset[str]
    sizes: Mapping[str, int]
    owner: ast.ProgramDecl
    call: bool = False  # `sample v <- template(...)`: its steps follow, under `v$`
    opens: bool = False
    summed: bool = False
    outside: frozenset[str] = frozenset()


def _flatten(
    models: Mapping[str, Model], top: Model, objects: Mapping[str, int], summed: bool
) -> list[_Item]:
    """Every step of `top` in run order, nested as the run nests them: the checked scope
    tree (`Model.tree`), or with `summed` the plan NUTS and SVI evaluate (`Model.summed`,
    each discrete latent a scope over its readers); each template call followed by its
    steps (their scopes inside the caller's). Iterative: a deep nesting costs no
    recursion."""

    def plan(model: Model) -> tuple[Node, ...]:
        return model.summed if summed else model.tree

    out: list[_Item] = []
    # (nodes, next index, model, prefix, scopes around, sizes, template depth)
    work: list[tuple[tuple[Node, ...], int, Model, str, tuple[str, ...], Mapping[str, int], int]]
    work = [(plan(top), 0, top, "", (), objects, 0)]
    while work and len(out) < MAX_STEPS:
        nodes, i, model, prefix, outer, sizes, depth = work.pop()
        if i >= len(nodes):
            continue
        node = nodes[i]
        work.append((nodes, i + 1, model, prefix, outer, sizes, depth))
        step = node.step
        name = prefix + step.name
        reads = frozenset(prefix + r for r in step.reads())
        callee = models.get(step.callee) if isinstance(step, Site) and step.callee else None
        opens = node.scope and not (isinstance(step, Site) and step.callee)
        outside = frozenset(prefix + r for r in node.outside) if opens else frozenset()
        item = _Item(
            name,
            step,
            outer,
            reads,
            sizes,
            model.decl,
            callee is not None,
            opens,
            node.summed,
            outside,
        )
        out.append(item)
        if node.body:
            work.append((node.body, 0, model, prefix, (*outer, name), sizes, depth))
        if callee is None or depth >= MAX_TEMPLATE_DEPTH:
            continue
        assert isinstance(step, Site)
        bound = dict(sizes)
        for param, arg in zip(callee.params, step.call_values, strict=False):
            if param.kind in PLATE_KINDS and isinstance(arg, Ref):
                bound[param.name] = sizes.get(arg.name, 0)
        work.append((plan(callee), 0, callee, f"{name}$", outer, bound, depth + 1))
    return out


# ------------------------------------------------------------------ sizes


def _size(name: str, declared: int, sizes: Mapping[str, int], rows: int) -> int:
    """An axis: the object's size (or the rows a subsampled step scores of it, which
    `_walk` puts in `sizes`), a template's plate by what the caller gave, else the
    data's rows."""
    given = sizes.get(name, 0)
    if declared > 0:
        return given if 0 < given < declared else declared
    return given if given > 0 else rows


def _values(t: Plated | None, sizes: Mapping[str, int], rows: int) -> int:
    """How many numbers a value of type `t` holds (plates, then one draw's axes)."""
    if t is None:
        return 1
    n = 1
    for p in t.plates:
        n *= _size(p.name, p.size, sizes, rows)
    for e in t.element.event:
        n *= e if e > 0 else rows
    return n * rows if t.data_plates else n


def _groups(site: Site, sizes: Mapping[str, int], rows: int) -> int:
    """The independent sums of a scope: a `marginalize`'s groups (`over=G`), a summed
    latent's plates (one coordinate per entry, as the runtime sums it)."""
    grouping = site.over if site.kind == "marginalize" else site.plates
    return math.prod(_size(p, 0, sizes, rows) for p in grouping)


def support_size(site: Site, sizes: Mapping[str, int]) -> int | None:
    """How many values a `marginalize` enumerates: its `: K` object's size, a Bernoulli's
    two, a Binomial's `total_count + 1` written as a number; None when only the run's
    arguments say (the runtime's guard counts those)."""
    t = site.type
    kind = t.element.kind if t is not None else None
    if kind == "boolean":
        return 2
    if kind in ("index", "ordinal") and t is not None:
        if t.element.of is not None and sizes.get(t.element.of, 0) > 0:
            return sizes[t.element.of]
        for a in site.args:
            event = a.type.element.event if a.type is not None else ()
            if event and event[-1] > 0:
                return event[-1] + (1 if kind == "ordinal" and a.param == "cutpoints" else 0)
        return None
    if kind == "integer_interval":
        count = next((a.literal for a in site.args if a.param == "total_count"), None)
        if isinstance(count, float) and count >= 0:
            return int(count) + 1
    return None


def _operations(term: Term) -> int:
    """The tensors evaluating a term makes (each operator, call, gather, list)."""
    n, todo = 0, [term]
    while todo:
        t = todo.pop()
        if isinstance(t, Ref | Num):
            continue
        n += 1
        if isinstance(t, Unary):
            todo.append(t.operand)
        elif isinstance(t, Op):
            todo += [t.left, t.right]
        elif isinstance(t, Call):
            todo.extend(t.args)
        elif isinstance(t, Stack):
            todo.extend(t.items)
        elif isinstance(t, Gather):
            todo.extend(i for i in t.indices if i is not None)
        elif isinstance(t, Comprehension):  # the body once per entry, then the stacks
            cells = 1
            for size in t.sizes:
                cells *= max(size, 1)
            if t.body is not None:
                n += cells * _operations(t.body) + len(t.sizes)
            todo.extend(t.cases)
        elif isinstance(t, Fold):  # the body once per entry, each step's value kept
            n += max(t.size, 1) * _operations(t.body)
            todo += [t.items, t.init]
    return n


# ------------------------------------------------------------------ scopes


@dataclass
class _Open:
    """A scope while walking its body: how many times its body runs, and what it costs."""

    item: _Item
    values: int
    groups: int
    runs: int  # evaluations of its body in one log joint
    keys: int  # distinct sums of it (runs / values)
    deps: tuple[str, ...]
    bytes: int = 0


@dataclass
class _Sized:
    latent: int = 0
    data: int = 0  # observed values and data names, in numbers
    graph: int = 0  # bytes of one log joint's graph, enumeration included
    held: int = 0  # bytes the method keeps (guide, draws)
    runs: dict[str, int] = field(default_factory=dict)  # scope -> runs of its body
    needs: dict[tuple[str, str], Need] = field(default_factory=dict)


# ------------------------------------------------------------------ the estimate


def estimate_model(
    tables: Any,
    program: str,
    *,
    method: str = "svi",
    steps: int = 100,
    chains: int = 1,
    data_bytes: int = 0,
    rows: int | None = None,
    subsample: tuple[str, int] | None = None,
    summed: bool = True,
) -> Estimate:
    """The memory one run of model program `program` needs.

    `tables` has the checked `models` by name and the `objects` (a CheckedModule,
    or the checker's tables while it types). `data_bytes` is the size of the data
    read for the run, `rows` the entries of its longest array: an axis only the
    data sizes is counted as that long (as the file can hold, without `rows`).
    `summed` False sizes NUTS and SVI on the scope tree, without the sums of the
    discrete latents they sum out: planning those sums is quadratic in a chain of such
    latents (an HMM written state by state), which the checker, sizing while one types,
    leaves to the run's own sizing.
    NUTS `chains` each hold the program, its graph and their draws. `subsample`
    `(plate, rows)`: each SVI step scores that many of the plate's rows (and of the
    data's rows, which line up with it), so its graph is of those rows; the data
    read is held whole.
    """
    chains = chains if method == "nuts" else 1
    if rows is None:
        rows = data_bytes // DATA_BYTES_PER_NUMBER
    if subsample is not None:
        rows = min(rows, subsample[1])
    sized, owners = _walk(tables, program, method, steps, max(rows, 1), subsample, summed)
    return Estimate(
        program=program,
        method=method,
        batch=1,
        seq_len=1,
        parameters=sized.latent,
        parameter_bytes=chains * sized.held,
        activation_bytes=chains * sized.graph,
        data_bytes=sized.data * FLOAT_BYTES * 2 + data_bytes * 2,
        needs=tuple(sized.needs.values()),
        reached=owners,
        kind="model",
        chains=chains,
    )


def scope_runs(tables: Any, program: str) -> dict[str, int]:
    """How many times each scope's body runs in one log joint NUTS and SVI evaluate (a
    `marginalize`, or a discrete latent summed out; a template's as `v$z`): what the
    runtime's enumeration does, and what the estimate counts."""
    return _walk(tables, program, "svi", 1, 1)[0].runs


def _walk(
    tables: Any,
    program: str,
    method: str,
    steps: int,
    rows: int,
    subsample: tuple[str, int] | None = None,
    summed: bool = True,
) -> tuple[_Sized, frozenset[str]]:
    """Every step in run order, with what it costs each time and how many times it runs
    (`rows`: the length of an axis only the data sizes; `subsample`: a plate a step
    scores only some rows of)."""
    models: Mapping[str, Model] = tables.models
    objects = {n: int(o.size) for n, o in tables.objects.items()}
    if subsample is not None and subsample[0] in objects:
        objects[subsample[0]] = min(objects[subsample[0]], subsample[1])
    top = models[program]
    draws = max(steps - steps // 2, 1)
    enumerates = method != "prior"  # prior draws every coordinate instead of summing it
    items = _flatten(models, top, objects, enumerates and summed)
    sized = _Sized()
    open_: list[_Open] = []
    scoped: dict[str, frozenset[str]] = {}  # names bound in a scope -> coordinates they read
    for item in items:
        while open_ and (len(open_) > len(item.scope) or open_[-1].item.name != item.scope[-1]):
            _close(open_, sized)
        runs = open_[-1].runs if open_ else 1
        active = {o.item.name for o in open_}
        if open_:
            scoped[item.name] = _depends(item.reads, active, scoped)
        step = item.step
        if isinstance(step, Let):
            ops = _operations(step.term)
            n = _values(step.type, item.sizes, rows)
            _add(open_, sized, runs * ops * (OP_BYTES + n * FLOAT_BYTES))
        elif item.call:
            _add(open_, sized, runs * OP_BYTES * max(len(step.call_values), 1))
        elif item.opens:
            assert isinstance(step, Site)
            if item.summed:  # a latent too: the fit draws it back and keeps its draws
                _site(item, step, runs, open_, sized, method, rows, steps, draws)
            values = (support_size(step, item.sizes) or 1) if enumerates else 1
            groups = _groups(step, item.sizes, rows)
            reads = item.outside if enumerates else frozenset()
            deps = _depends(reads, active, scoped) & active
            keys = min(math.prod(o.values for o in open_ if o.item.name in deps), runs)
            order = tuple(o.item.name for o in open_ if o.item.name in deps)
            # its sum's term in the scope around it, once per run of that scope's body
            outer = open_[-1].groups if open_ else 1
            _add(open_, sized, runs * (OP_BYTES + outer * FLOAT_BYTES))
            own = enumeration_bytes(keys * values, groups)
            open_.append(_Open(item, values, groups, keys * values, keys, order, own))
            sized.graph += own
            sized.runs[item.name] = keys * values
        else:
            _site(item, step, runs, open_, sized, method, rows, steps, draws)
    while open_:
        _close(open_, sized)
    sized.data += sum(_values(d.type, objects, rows) for d in top.data if not d.observed)
    return sized, frozenset({program, *(i.owner.name.text for i in items)})


def _depends(
    reads: frozenset[str], active: set[str], scoped: Mapping[str, frozenset[str]]
) -> frozenset[str]:
    """The enumerated coordinates a value computed from `reads` depends on (the runtime's
    `_depends_on`)."""
    out: set[str] = set()
    for n in reads:
        if n in active:
            out.add(n)
        elif n in scoped:
            out |= scoped[n]
    return frozenset(out)


def _add(open_: list[_Open], sized: _Sized, amount: int) -> None:
    sized.graph += amount
    if open_:
        open_[-1].bytes += amount


def _site(
    item: _Item,
    step: Site,
    runs: int,
    open_: list[_Open],
    sized: _Sized,
    method: str,
    rows: int,
    steps: int,
    draws: int,
) -> None:
    """A family site: its graph in every run of its scope, and what the method keeps."""
    n = _values(step.type, item.sizes, rows)
    graph = runs * (STEP_BYTES + n * GRAPH_BYTES)
    _add(open_, sized, graph)
    latent = step.kind == "sample"
    if method == "prior":
        held = n * PRIOR_DRAW_BYTES * steps
        keeps = f"; prior sampling keeps {format_count(steps)} draws of them"
    elif not latent:
        held, keeps = 0, ", with their log-densities"
    elif method == "svi":
        held = n * SVI_LATENT_BYTES
        keeps = f"; svi keeps the guide, Adam's moments and {GUIDE_DRAWS} draws of them"
    else:
        held = n * (NUTS_LATENT_BYTES + NUTS_DRAW_BYTES * draws)
        keeps = f"; nuts keeps {format_count(draws)} draws of them in each chain"
    sized.held += held
    if latent:
        sized.latent += n
    else:
        sized.data += n
    t = step.type
    axes = [p.name for p in t.plates] if t is not None else []
    if t is not None and t.element.event and t.element.of:
        axes.append(t.element.of)
    plates = ", ".join(axes)
    if t is not None and (t.data_plates or any(e <= 0 for e in t.element.event)):
        plates = f"{plates}, rows of the data" if plates else "rows of the data"
    what = f"holds {_plural(n, 'value')}" + (f" ({plates})" if plates else "")
    label = f"{step.kind} {item.name}"
    # what its values cost in one evaluation: the runs of a scope are the scope's need
    mine = held + n * GRAPH_BYTES
    _need(sized, label, item, mine, what + keeps, "values")


def _close(open_: list[_Open], sized: _Sized) -> None:
    """A scope ends: its need is everything its runs keep; the scope around it has it too."""
    o = open_.pop()
    if open_:
        open_[-1].bytes += o.bytes
    step = o.item.step
    assert isinstance(step, Site)
    t = step.type
    of = t.element.of if t is not None and t.element.of else step.family
    what = f"sums over {_plural(o.values, 'value')} ({of})"
    if o.groups > 1:
        what += f" in each of {format_count(o.groups)} groups ({', '.join(step.over)})"
    if o.keys > 1:
        deps = _names(o.deps)
        what += (
            f" once for each of the {format_count(o.keys)} values of {deps} it reads, so "
            f"its body runs {format_count(o.runs)} times in every log joint"
        )
    elif o.runs > 1:
        what += f", so its body runs {format_count(o.runs)} times in every log joint"
    _need(sized, f"marginalize {o.item.name}", o.item, o.bytes, what, "enumeration")


def _plural(n: int, word: str) -> str:
    return f"{format_count(n)} {word}{'' if n == 1 else 's'}"


def _names(names: tuple[str, ...]) -> str:
    if len(names) <= 3:
        return ", ".join(names)
    return f"{names[0]}, {names[1]}, ... {names[-1]} ({len(names)} coordinates)"


def _need(sized: _Sized, label: str, item: _Item, amount: int, reason: str, kind: str) -> None:
    key = (label, kind)
    old = sized.needs.get(key)
    if old is None or old.bytes < amount:
        span = item.step.step.target.span
        sized.needs[key] = Need(label, span, item.owner, amount, reason, kind)
