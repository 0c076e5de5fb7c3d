"""What a run of a program will need in memory, from the checked tables alone.

`qvr run` and the editor's "run inference" call `estimate` before anything is
compiled or allocated, and refuse a run whose estimate is over the memory
budget (`MemoryBudgetError`, naming the declaration that needs the most); the
checker calls it at a default batch and sequence length and warns (QVR601)
while the user types. torch is not imported: the model reads only the
declared morphisms (dimensions and options), the lets' and programs'
expressions (`stack`, `repeat`, `scan`, replicate groups) and the programs'
site types, with what the builtin registry says of each family's kernel form
(its network's output width, a learned scale) and each combinator's cost, so a
new family or combinator is sized from its entry (`tests/resources/
test_family_parameter_counts.py` holds every one to the compiled module).

What is counted, per method (floats are 4 bytes, indices 8):

- parameters, as the runtime makes them: a declared morphism once per key
  (every replicated copy; every copy of a `stack`, nested stacks multiply),
  shared by all its uses; with gradients and Adam's two moments for `svi`;
- activations of one forward pass kept for the backward pass, per example
  and position: a morphism applied to a sequence runs once per position, a
  `scan` cell once per step, a `repeat` body n times; times the batch;
- the data (inputs and observations) and what a method keeps: NUTS keeps
  every draw of every parameter and latent value, prior sampling every
  site's draws;
- torch's own working memory in a run, a constant (`RUNTIME_BYTES`).

It is an estimate of the peak (measured against the real runs by
`bench/resources.py`), meant to tell a run that fits from one that
cannot (25 TB, a billion applications), not to predict to the megabyte.

A model program (family steps, plates, `marginalize` scopes, data names) is
sized by `qvr_core.sizing.model_resources`, from the checker's `Model`, into the same
`Estimate` and `Need`s (`kind="model"`), so that its refusal reads like this one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from qvr_core.builtins import COMBINATORS, FAMILIES, LAYER_NORM, Combinator
from qvr_core.builtins.combinators import learned_init
from qvr_core.check.types import Product, Seq, ValueType
from qvr_core.syntax import ast
from qvr_core.text.span import Span
from qvr_core.text.units import format_bytes, format_count

FLOAT_BYTES = 4
INDEX_BYTES = 8
#: Python and torch bookkeeping of one compiled morphism (modules, tensors), in bytes.
MODULE_BYTES = 16_384
#: The default budget is this fraction of the memory available when it is asked.
DEFAULT_FRACTION = 0.5
#: Used when the available memory cannot be read (no /proc/meminfo).
FALLBACK_BUDGET = 4 << 30
#: The batch and sequence length the checker assumes (those of `qvr run`).
CHECK_BATCH = 16
CHECK_SEQ_LEN = 8
#: torch's own working memory in a run (allocator, autograd engine, optimiser bookkeeping):
#: about 15-30 MB above the baseline in the small configurations `bench/resources.py` and
#: tests/resources measure (it was 50-90 MB while every SVI run imported torch's compiler:
#: inference/adam.py).
RUNTIME_BYTES = 32 << 20
#: Draws NUTS keeps per iteration (zs and the unpacked samples) and its working copies.
_NUTS_COPIES = 12


# ------------------------------------------------------------------ budget


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo in bytes (None where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def address_space_left() -> int | None:
    """What this process may still map under its address-space limit (`ulimit -v`, the
    server's worker limit), in bytes; None without a limit."""
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm", encoding="ascii") as f:
            mapped = int(f.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError, ValueError, IndexError):
        return None
    return max(soft - mapped, 0)


def default_budget() -> int:
    """Half of the memory available now (4 GiB when that cannot be read), and no more than
    the address space this process has left."""
    free = available_memory()
    budget = int(free * DEFAULT_FRACTION) if free else FALLBACK_BUDGET
    left = address_space_left()
    return budget if left is None else min(budget, left)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1 << 20, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MAX_BUDGET = 1 << 50


def parse_size(value: object) -> int:
    """A memory size in bytes from `512MB`, `8 GiB`, `4g` or a number of MiB.

    Raises ValueError with a message a user can act on.
    """
    if isinstance(value, bool):
        raise ValueError(f"a memory size must be like 512MB or 8GB, not {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"a memory size must be positive, not {value!r}")
        scaled = float(value) * (1 << 20)
    elif isinstance(value, str) and len(value) <= 40 and (m := _SIZE.match(value)):
        unit = (m.group(2) or "").lower()
        scaled = float(m.group(1)) * _UNITS[unit[:1] if unit != "b" else "b"]
    else:
        raise ValueError(f"a memory size must be like 512MB or 8GB (or MiB), not {value!r}")
    # Compared as a float first: a huge number is out of range, not an overflow.
    if not 1 << 20 <= scaled <= MAX_BUDGET:
        raise ValueError(f"a memory size must be from 1MB to 1PB, not {value!r}")
    return int(scaled)


# ------------------------------------------------------------------ results


@dataclass(frozen=True)
class Need:
    """One thing that needs memory: what, where it is written, how much, and why."""

    label: str  # "morphism cell", "stack(block, 100000)"
    span: Span
    owner: object  # the declaration whose text holds `span` (the checker places it)
    bytes: int
    reason: str  # "12,800,000,006,464 parameters (input 100000000063, ...)"
    kind: str = "parameters"  # or "activations", "draws"

    def describe(self) -> str:
        return f"{self.label} (line {self.span.start_line + 1}) {self.reason}"


@dataclass(frozen=True)
class Estimate:
    """What one run needs: the parts, their sum and the largest single need."""

    program: str
    method: str
    batch: int
    seq_len: int
    parameters: int
    parameter_bytes: int  # with gradients and optimiser state
    activation_bytes: int
    data_bytes: int
    needs: tuple[Need, ...] = field(repr=False)
    reached: frozenset[str] = field(default=frozenset(), repr=False)  # declarations it uses
    #: "morphism" (a seed program: batch, sequence length, parameters) or "model" (a model
    #: program, `qvr_core.sizing.model_resources`: no batch, `parameters` counts its latent values)
    kind: str = "morphism"
    chains: int = 1  # NUTS chains run side by side (each holds its own copy)

    @property
    def total(self) -> int:
        return self.parameter_bytes + self.activation_bytes + self.data_bytes + RUNTIME_BYTES

    def setting(self) -> str:
        """The run it sizes, in words: `svi at batch 16, seq_len 8 (1,234 parameters)`, or
        for a model program `nuts in 4 chains (1,000 latent values)`."""
        if self.kind == "model":
            chains = f" in {self.chains} chains" if self.chains > 1 else ""
            latent = "latent value" if self.parameters == 1 else "latent values"
            return f"{self.method}{chains} ({format_count(self.parameters)} {latent})"
        return (
            f"{self.method} at batch {self.batch}, seq_len {self.seq_len} "
            f"({format_count(self.parameters)} parameters)"
        )

    def culprit(self, budget: int, kind: str | None = None) -> Need | None:
        """The most specific need (of `kind`, if given) that is over `budget` by itself, else
        the largest one."""
        needs = [n for n in self.needs if kind is None or n.kind == kind]
        over = [n for n in needs if n.bytes > budget]
        if over:
            return min(over, key=lambda n: n.bytes)
        return max(needs, key=lambda n: n.bytes, default=None)

    def refusal(self, budget: int) -> str:
        """One line: how much, against what budget, and what needs the most."""
        culprit = self.culprit(budget)
        why = f": {culprit.describe()}" if culprit is not None else ""
        return (
            f"program {self.program} needs about {format_bytes(self.total)} for "
            f"{self.setting()}, over the memory budget of {format_bytes(budget)}{why}"
        )


class MemoryBudgetError(ValueError):
    """A run would need more memory than its budget allows."""

    def __init__(self, estimate: Estimate, budget: int) -> None:
        super().__init__(estimate.refusal(budget))
        self.estimate = estimate
        self.budget = budget


def check_budget(estimate: Estimate, budget: int) -> None:
    """Raise MemoryBudgetError when the estimate is over the budget."""
    if estimate.total > budget:
        raise MemoryBudgetError(estimate, budget)


# ------------------------------------------------------------------ sizes of leaves


def _feature_width(p: Product) -> int:
    """Floats a parameter network reads: a FinSet factor one-hot, a continuous one as is."""
    return sum(f.size for f in p.factors)


def _rows(p: Product) -> int:
    return math.prod(f.size for f in p.factors)


@dataclass(frozen=True)
class _Leaf:
    """The sizes of one compiled declared morphism (one copy)."""

    parameters: int
    floats: int  # activations of one application, per example and position
    reason: str


def _leaf(info: Any) -> _Leaf:
    dom: Product = info.type.dom if not isinstance(info.type.dom, Seq) else info.type.dom.elem
    cod: Product = info.type.cod if not isinstance(info.type.cod, Seq) else info.type.cod.elem
    if info.role == "embed":
        rows = _rows(dom)
        return _Leaf(
            rows * cod.width, 3 * cod.width, f"a table of {format_count(rows)} x {cod.width}"
        )
    if info.role == "discretize":
        return _Leaf(0, 2 * _rows(cod), f"{info.bins} bins, nothing learned")
    if info.role == "latent" or (info.role == "kernel" and info.family is None):
        n, m = _rows(dom), _rows(cod)  # a product of sets: one axis each (a relation)
        return _Leaf(n * m, 4 * m, f"a {format_count(n)} x {format_count(m)} matrix")
    family = FAMILIES.get(info.family) if info.family is not None else None
    if family is not None and family.kernel is not None and family.kernel.outputs == "flow":
        return _flow(info, dom, cod)
    n_in = _feature_width(dom)
    n_out, scale = cod.width, 0
    if family is not None and family.kernel is not None:
        n_out = family.network_width(cod.factors, info.draw, dict(info.family_options))
        scale = family.held_parameters(cod.factors, info.scale is not None)
        if not n_out:  # a GP: its own hyperparameters, no network
            return _Leaf(scale, 3 * cod.width, f"{scale} hyperparameters, no network")
    if info.given is not None:  # `~ F(args)`: the network gives only what is left out
        n_out, scale = len(info.network) * cod.width, 0
        if not n_out:
            return _Leaf(0, 2 * cod.width, "every parameter given")
    if info.param_source == "linear" and info.rank:
        r = info.rank
        params = r * (n_in + n_out) + n_out
        floats, net = n_in + r, f"rank {r}"
    elif info.param_source == "linear":
        params, floats, net = n_in * n_out + n_out, n_in, "linear"
    elif info.param_source == LAYER_NORM.name:  # a gain and a bias per entry
        params, floats, net = 2 * n_out, 2 * n_in, "layer norm"
    else:
        h = info.hidden_dim
        params = n_in * h + h + h * n_out + n_out
        floats, net = n_in + 3 * h, f"hidden {h}"
    floats += 2 * n_out + 2 * cod.width  # the network output; a draw and its noise
    reason = f"input {format_count(n_in)}, {net}, output {format_count(n_out)}"
    return _Leaf(params + scale, floats, reason)


def _flow(info: Any, dom: Product, cod: Product) -> _Leaf:
    """`~ Flow`: n_layers coupling layers, each its own network of hidden_dim units (and
    embedding of a finite input), moving the odd then the even coordinates in turn
    (`runtime/flows.py`)."""
    layers = int(dict(info.family_options).get("n_layers", 4))
    h, width = info.hidden_dim, cod.width
    rows = _rows(dom) if dom.discrete else 0
    condition = h if rows else _feature_width(dom)
    params = 0
    for i in range(layers):
        kept = (width + 1) // 2 if i % 2 == 0 else width // 2
        moved = width - kept
        params += rows * h + (condition + kept) * h + h + h * h + h + h * 2 * moved + 2 * moved
    floats = layers * (condition + 3 * h + 4 * width)
    return _Leaf(params, floats, f"{layers} coupling layers of {h} units")


def _leaf_reason(name: str, info: Any, leaf: _Leaf) -> str:
    return f"has {format_count(leaf.parameters)} parameters ({info.type.label}: {leaf.reason})"


# ------------------------------------------------------------------ the walk


@dataclass
class _Cost:
    """Activations of an expression per example: kept for backward (`kept`) and the peak of
    one application without gradients (`peak`); whether its output is a sequence."""

    kept: int
    peak: int
    seq: bool


class Model:
    """Sizes of the programs of one checked module (tables from `CheckedModule` or the checker).

    `morphisms` by declared name (MorphismInfo), `lets` by name (LetInfo),
    `programs` by name (ProgramInfo).
    """

    def __init__(
        self,
        morphisms: Mapping[str, Any],
        lets: Mapping[str, Any],
        programs: Mapping[str, Any],
    ) -> None:
        self.morphisms = morphisms
        self.lets = lets
        self.programs = programs
        self._leaves: dict[str, _Leaf] = {}
        self._params: dict[int, int] = {}  # stack call id -> parameters of one copy
        self._reached: dict[int, set[str]] = {}  # stack call id -> declarations its body uses
        self.reached: set[str] = set()
        self._costs: dict[tuple[int, bool, int], _Cost] = {}
        self.needs: dict[tuple[str, int], Need] = {}

    # ------------------------------------------------------------ names

    def leaf(self, base: str) -> _Leaf:
        if base not in self._leaves:
            self._leaves[base] = _leaf(self.morphisms[base])
        return self._leaves[base]

    def _morphism(self, name: str) -> tuple[Any, int | None] | None:
        if name in self.morphisms:
            return self.morphisms[name], None
        base, _, idx = name.rpartition("_")
        info = self.morphisms.get(base)
        if info is not None and info.replicate and idx.isdigit() and int(idx) < info.replicate:
            return info, int(idx)
        return None

    def _body(self, name: str) -> tuple[Any, list[ast.Expr]] | None:
        """(owner declaration, expressions) of a let or program used by name."""
        let = self.lets.get(name)
        if let is not None:
            return let.decl, [let.decl.expr]
        prog = self.programs.get(name)
        if prog is not None:
            return prog.decl, [s.source for s in prog.sites]
        return None

    # ------------------------------------------------------------ parameters

    def parameters(self, roots: list[tuple[object, ast.Expr]], bytes_each: int) -> int:
        """Parameters of the morphisms these expressions compile to, each key counted once.

        Iterative: a chain of 20,000 lets costs no recursion. `bytes_each` (per
        parameter, with gradients and optimiser state) sizes the needs recorded.
        The names of the declarations reached are left in `reached`.
        """
        for owner, call in self._unsized_stacks(roots):
            self._size_stack(owner, call, bytes_each)
        self.reached = set()
        bases: set[str] = set()
        stacks: dict[int, tuple[object, ast.Call]] = {}
        calls: dict[int, tuple[Combinator, ast.Call]] = {}  # for what each holds itself
        seen_decls: set[str] = set()
        todo: list[tuple[object, ast.Arg]] = list(roots)
        while todo:
            owner, e = todo.pop()
            if isinstance(e, ast.NameRef):
                name = e.name.text
                found = self._morphism(name)
                if found is not None:
                    info, index = found
                    seen_decls.add(info.name)
                    if info.replicate and index is None:
                        bases.update(info.members)
                        self._leaf_need(info, owner, bytes_each)
                    else:
                        bases.add(info.name if index is None else f"{info.name}_{index}")
                        self._leaf_need(info, owner, bytes_each)
                elif name not in seen_decls and (body := self._body(name)) is not None:
                    seen_decls.add(name)
                    todo.extend((body[0], x) for x in body[1])
            elif isinstance(e, ast.Compose | ast.Tensor):
                todo += [(owner, e.left), (owner, e.right)]
            elif isinstance(e, ast.Call):
                combinator = COMBINATORS.get(e.callee.text)
                if combinator is not None:
                    calls[id(e)] = (combinator, e)
                if combinator is not None and combinator.cost.fresh_copies:
                    stacks[id(e)] = (owner, e)
                else:
                    todo.extend((owner, a) for a in e.args if not isinstance(a, ast.Literal))
        total = sum(self.leaf(self._base(b)).parameters for b in bases)
        total += sum(self.held(c, call) for c, call in calls.values())
        for owner, call in stacks.values():
            total += self._stack(owner, call, bytes_each, seen_decls)
        self.reached = seen_decls
        return total

    def held(self, combinator: Combinator, call: ast.Call) -> int:
        """Parameters a combinator's own module holds (per call, beside its arguments'):
        a scan with `init=learned` holds its first state."""
        learned = any(kw.key.text == "init" and learned_init(kw.word) is True for kw in call.kwargs)
        return combinator.cost.parameters + (self._state_width(call) if learned else 0)

    def _state_width(self, call: ast.Call) -> int:
        """The width of a scan cell's codomain, from the type its declaration was given."""
        cell = call.args[0] if call.args else None
        if not isinstance(cell, ast.NameRef):
            return 0
        name = cell.name.text
        found = self._morphism(name)
        info: Any = found[0] if found is not None else self.programs.get(name)
        info = info if info is not None else self.lets.get(name)
        t = getattr(info, "type", None) or getattr(info, "header", None)
        cod = getattr(t, "cod", None)
        return int(cod.dim) if isinstance(cod, Product) else 0

    def _base(self, key: str) -> str:
        found = self._morphism(key)
        assert found is not None
        name: str = found[0].name
        return name

    def _leaf_need(self, info: Any, owner: object, bytes_each: int) -> None:
        leaf = self.leaf(info.name)
        key = (f"morphism {info.name}", id(info.decl))
        if key not in self.needs:
            self.needs[key] = Need(
                f"morphism {info.name}",
                info.decl.name.span,
                info.decl,
                leaf.parameters * bytes_each,
                _leaf_reason(info.name, info, leaf),
            )

    def _size_stack(self, owner: object, call: ast.Call, bytes_each: int) -> None:
        """Parameters of one copy of a stack's body (its inner stacks sized already)."""
        body = call.args[0]
        assert isinstance(body, ast.Expr)  # the checker typed this stack's body
        self._params[id(call)] = self.parameters([(owner, body)], bytes_each)
        self._reached[id(call)] = self.reached

    def _direct_stacks(
        self, roots: Sequence[tuple[object, ast.Arg]]
    ) -> list[tuple[object, ast.Call]]:
        """The stack calls these expressions reach without entering another stack's body."""
        found: list[tuple[object, ast.Call]] = []
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            owner, e = todo.pop()
            if isinstance(e, ast.NameRef):
                name = e.name.text
                if name not in seen and (body := self._body(name)) is not None:
                    seen.add(name)
                    todo.extend((body[0], x) for x in body[1])
            elif isinstance(e, ast.Compose | ast.Tensor):
                todo += [(owner, e.left), (owner, e.right)]
            elif isinstance(e, ast.Call):
                if _fresh_copies(e):
                    found.append((owner, e))
                else:
                    todo.extend((owner, a) for a in e.args if not isinstance(a, ast.Literal))
        return found

    def _unsized_stacks(
        self, roots: Sequence[tuple[object, ast.Arg]]
    ) -> list[tuple[object, ast.Call]]:
        """Stack calls not sized yet, each after the stacks inside its body: sizing them in
        this order never nests, so a chain of a thousand stacks costs no recursion."""
        order: list[tuple[object, ast.Call]] = []
        entered: set[int] = set()
        work = [(False, owner, call) for owner, call in self._direct_stacks(roots)]
        while work:
            expanded, owner, call = work.pop()
            if id(call) in self._params:
                continue
            if expanded:
                order.append((owner, call))
                self._params[id(call)] = -1  # placed; sized by the caller in this order
                continue
            if id(call) in entered:
                continue  # a cycle (reported by the checker) or already on the way
            entered.add(id(call))
            work.append((True, owner, call))
            body = call.args[0]
            if not isinstance(body, ast.Literal):
                work.extend((False, o, c) for o, c in self._direct_stacks([(owner, body)]))
        for _, call in order:
            del self._params[id(call)]
        return order

    def _stack(self, owner: object, call: ast.Call, bytes_each: int, reached: set[str]) -> int:
        if id(call) not in self._params:
            self._size_stack(owner, call, bytes_each)
        one = self._params[id(call)]
        reached |= self._reached[id(call)]
        n = _times(call)
        self._need(
            owner,
            call,
            n * one * bytes_each,
            f"makes {format_count(n)} copies of {format_count(one)} parameters each",
        )
        return n * one

    # ------------------------------------------------------------ activations

    def prepare(self, program: str, seq_len: int) -> None:
        """Cost every let and program `program` uses, those it uses first.

        Then costing `program` finds its names done, and no walk recurses
        through a chain of lets (only through one expression's nesting).
        """
        order: list[str] = []
        done: set[str] = set()
        todo: list[tuple[str, bool]] = [(program, False)]
        while todo:
            name, expanded = todo.pop()
            if expanded:
                order.append(name)
                continue
            if name in done:
                continue
            done.add(name)
            todo.append((name, True))
            body = self._body(name)
            for e in body[1] if body else ():
                todo.extend(
                    (n, False) for n in _names(e) if n not in done and self._body(n) is not None
                )
        for name in order:
            natural = self._takes_sequence(name)
            for seq in {False, natural}:
                if name in self.lets:
                    let = self.lets[name]
                    self.cost(let.decl, let.decl.expr, seq, seq_len)
                else:
                    self._program(name, seq, seq_len)

    def cost(self, owner: object, e: ast.Arg, seq: bool, seq_len: int) -> _Cost:
        """Activations of `e` applied once (per example) to a sequence (`seq`) or a value."""
        key = (id(e), seq, seq_len)
        if key not in self._costs:
            self._costs[key] = self._cost(owner, e, seq, seq_len)
        return self._costs[key]

    def _cost(self, owner: object, e: ast.Arg, seq: bool, seq_len: int) -> _Cost:
        if isinstance(e, ast.NameRef):
            return self._named(owner, e, seq, seq_len)
        if isinstance(e, ast.Compose):  # a long chain is a deep tree: walk it in a loop
            kept = peak = 0
            for part in _chain(e, ast.Compose):
                c = self.cost(owner, part, seq, seq_len)
                kept, peak, seq = kept + c.kept, max(peak, c.peak), c.seq
            return _Cost(kept, peak, seq)
        if isinstance(e, ast.Tensor):
            return _parallel([self.cost(owner, x, seq, seq_len) for x in _chain(e, ast.Tensor)])
        if isinstance(e, ast.Call):
            return self._call(owner, e, seq, seq_len)
        return _Cost(0, 0, seq)

    def _named(self, owner: object, e: ast.NameRef, seq: bool, seq_len: int) -> _Cost:
        name = e.name.text
        found = self._morphism(name)
        if found is not None:
            info, index = found
            leaf = self.leaf(info.name)
            copies = info.replicate if info.replicate and index is None else 1
            per = leaf.floats * copies * (seq_len if seq else 1)
            return _Cost(per, per, seq)
        body = self._body(name)
        if body is None:
            return _Cost(0, 0, seq)
        natural = self._takes_sequence(name)
        lifted = seq and not natural
        inner_seq = seq and natural
        decl, exprs = body
        if name in self.lets:
            c = self.cost(decl, exprs[0], inner_seq, seq_len)
        else:
            c = self._program(name, inner_seq, seq_len)
        if lifted:
            return _Cost(c.kept * seq_len, c.peak * seq_len, True)
        return c

    def _takes_sequence(self, name: str) -> bool:
        info = self.lets.get(name) or self.programs.get(name)
        t = getattr(info, "type", None) or getattr(info, "header", None)
        return isinstance(getattr(t, "dom", None), Seq)

    def _program(self, name: str, seq: bool, seq_len: int) -> _Cost:
        prog = self.programs[name]
        key = (id(prog), seq, seq_len)
        if key in self._costs:
            return self._costs[key]
        kept = peak = 0
        for s in prog.sites:
            if s.args is None:
                s_seq = seq
            else:
                s_seq = any(isinstance(prog.values.get(a), Seq) for a in s.args)
            c = self.cost(prog.decl, s.source, s_seq, seq_len)
            value = _value_floats(s.value_type, seq_len) * 4  # the value, its score, the guide's
            kept += c.kept + value
            peak = max(peak, c.peak + value)
        out = _Cost(kept, peak, isinstance(getattr(prog.type, "cod", None), Seq))
        self._costs[key] = out
        return out

    def _call(self, owner: object, e: ast.Call, seq: bool, seq_len: int) -> _Cost:
        """Activations of a combinator call, by how its registry entry says it runs."""
        combinator = COMBINATORS.get(e.callee.text)
        args = [a for a in e.args if isinstance(a, ast.Expr)]
        if combinator is None or not args:
            return _Cost(0, 0, seq)
        runs = combinator.cost.runs
        if runs == "each_step":
            cell = self.cost(owner, args[0], False, seq_len)
            steps = seq_len if seq else 1
            kept = cell.kept * steps
            self._need(
                owner, e, kept, f"runs its cell {format_count(steps)} times (seq_len)", act=True
            )
            return _Cost(kept, cell.peak, seq and combinator.cost.keeps_positions)
        if runs == "count":
            n = _times(e)
            body = self.cost(owner, args[0], seq, seq_len)
            kept = body.kept * n
            verb = "copies" if combinator.cost.fresh_copies else "applications"
            self._need(
                owner, e, kept, f"keeps the activations of {format_count(n)} {verb}", act=True
            )
            return _Cost(kept, body.peak, body.seq)
        return _parallel([self.cost(owner, a, seq, seq_len) for a in args])  # "once"

    # ------------------------------------------------------------ needs

    def _need(
        self, owner: object, e: ast.Call, amount: int, reason: str, act: bool = False
    ) -> None:
        scale = self._act_scale if act else 1
        label = _call_label(e)
        kind = "activations" if act else "parameters"
        key = (f"{label} {kind}", id(e))
        bytes_ = amount * scale
        old = self.needs.get(key)
        if old is None or old.bytes < bytes_:
            self.needs[key] = Need(label, e.span, owner, bytes_, reason, kind)

    _act_scale = FLOAT_BYTES  # set per estimate: bytes per float times the batch


def _names(e: ast.Expr) -> Iterator[str]:
    """The names an expression refers to (without following them)."""
    todo: list[ast.Arg] = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, ast.NameRef):
            yield x.name.text
        elif isinstance(x, ast.Compose | ast.Tensor):
            todo += [x.left, x.right]
        elif isinstance(x, ast.Call):
            todo.extend(x.args)


def _chain(e: ast.Expr, kind: type) -> list[ast.Expr]:
    """The operands of `a >> b >> c` (or `@`) in order, however the tree leans."""
    out: list[ast.Expr] = []
    todo = [e]
    while todo:
        x = todo.pop()
        if isinstance(x, kind):
            todo += [x.right, x.left]  # type: ignore[union-attr]  # kind: Compose or Tensor
        else:
            out.append(x)
    return out


def _fresh_copies(call: ast.Call) -> bool:
    """Whether the call makes copies with their own parameters (`stack`)."""
    combinator = COMBINATORS.get(call.callee.text)
    return combinator is not None and combinator.cost.fresh_copies


def _times(call: ast.Call) -> int:
    """The count argument of a call (`stack(b, 3)`: 3), where its combinator has one."""
    combinator = COMBINATORS.get(call.callee.text)
    index = combinator.count_index if combinator is not None else None
    lit = call.args[index] if index is not None and len(call.args) > index else None
    if isinstance(lit, ast.Literal) and lit.kind == "int":
        return max(int(lit.value), 0)
    default = combinator.default_count if combinator is not None else None
    return default if default is not None else 1


def _call_label(e: ast.Call) -> str:
    args = [a.raw if isinstance(a, ast.Literal) else _short(a) for a in e.args]
    return f"{e.callee.text}({', '.join(args)})"


def _short(e: ast.Arg) -> str:
    if isinstance(e, ast.NameRef):
        return e.name.text
    if isinstance(e, ast.Call):
        return f"{e.callee.text}(...)"
    return "..."


def _parallel(parts: list[_Cost]) -> _Cost:
    return _Cost(
        sum(p.kept for p in parts),
        sum(p.peak for p in parts),
        any(p.seq for p in parts),
    )


def _value_floats(t: ValueType | None, seq_len: int) -> int:
    if isinstance(t, Seq):
        return t.elem.width * seq_len
    if isinstance(t, Product):
        return t.width
    return 1


# ------------------------------------------------------------------ entry points


def estimate(
    tables: Any,
    program: str,
    *,
    method: str = "svi",
    batch: int = CHECK_BATCH,
    seq_len: int = CHECK_SEQ_LEN,
    steps: int = 100,
    model: Model | None = None,
    chains: int = 1,
) -> Estimate:
    """The memory one run of `program` needs (tables: a CheckedModule or the checker's).

    Nothing is allocated: sizes are Python integers however large. A `model`
    shared by several calls (same tables, batch and method) reuses what it
    worked out; its needs then mix programs, so ask again without one for the
    needs of a program found too large. NUTS `chains` each hold a copy of the
    program and their draws (they run in parallel processes).
    """
    m = model or Model(tables.morphisms, tables.lets, tables.programs)
    m.needs = {}
    prog = m.programs[program]
    roots = [(prog.decl, s.source) for s in prog.sites]
    per_param = FLOAT_BYTES * (4 if method == "svi" else 2)
    m._act_scale = FLOAT_BYTES * batch * (1 if method == "prior" else 2)
    parameters = m.parameters(roots, per_param)
    reached = frozenset(m.reached)
    keys = _leaf_keys(m, roots)
    m.prepare(program, seq_len)
    seq_in = isinstance(getattr(prog.type, "dom", None), Seq)
    cost = m._program(program, seq_in, seq_len)
    dom = getattr(prog.type, "dom", None) or getattr(prog.header, "dom", None)
    data = (
        (
            _value_floats(dom, seq_len)
            + sum(_value_floats(s.value_type, seq_len) for s in prog.sites if s.kind == "observe")
        )
        * batch
        * INDEX_BYTES
        * 2
    )
    latent = sum(_value_floats(s.value_type, seq_len) for s in prog.sites if s.kind == "sample")
    sites = sum(_value_floats(s.value_type, seq_len) for s in prog.sites)
    overhead = keys * MODULE_BYTES
    if method == "svi":
        param_bytes = parameters * per_param + latent * 2 * FLOAT_BYTES * 4 + overhead
        act_bytes = cost.kept * batch * FLOAT_BYTES * 2
    elif method == "nuts":
        draws = max(steps - steps // 2, 1)
        size = parameters + latent * batch
        param_bytes = chains * (size * FLOAT_BYTES * (_NUTS_COPIES + 4 * draws) + overhead)
        act_bytes = chains * cost.kept * batch * FLOAT_BYTES * 2
        what = (
            f"keeps {format_count(draws)} draws of {format_count(size)} values"
            " (parameters and latents)"
        )
        if chains > 1:
            what += f" in each of {chains} chains"
        m.needs[("nuts", 0)] = Need(
            f"nuts on program {program}", prog.decl.name.span, prog.decl, param_bytes, what, "draws"
        )
    else:
        param_bytes = parameters * FLOAT_BYTES + overhead
        act_bytes = cost.peak * batch * FLOAT_BYTES * 4
        kept = sites * batch * steps * FLOAT_BYTES * 4
        data += kept
        m.needs[("prior", 0)] = Need(
            f"prior sampling of program {program}",
            prog.decl.name.span,
            prog.decl,
            kept,
            f"keeps {format_count(steps)} draws of every site at batch {batch}",
            "draws",
        )
    return Estimate(
        program=program,
        method=method,
        batch=batch,
        seq_len=seq_len,
        parameters=parameters,
        parameter_bytes=param_bytes,
        activation_bytes=act_bytes,
        data_bytes=data,
        needs=tuple(m.needs.values()),
        reached=reached,
    )


def _leaf_keys(m: Model, roots: list[tuple[object, ast.Expr]]) -> int:
    """How many compiled morphisms there will be (stack copies included), for overhead."""
    counter = m.__dict__.get("_counter")
    if counter is None:
        counter = m.__dict__["_counter"] = _KeyCounter(m.morphisms, m.lets, m.programs)
    return counter.parameters(roots, 0)


class _KeyCounter(Model):
    """Counts compiled morphisms instead of parameters: every leaf "has one parameter"."""

    def leaf(self, base: str) -> _Leaf:
        return _ONE

    def held(self, combinator: Combinator, call: ast.Call) -> int:
        return 0  # a combinator's own parameters are in its call's module, not a new key


_ONE = _Leaf(1, 0, "")


def exported_programs(tables: Any) -> Iterator[str]:
    """The exported programs (what `qvr run` and the editor's run can start)."""
    for name in tables.exports:
        if name in tables.programs:
            yield name
