"""Composite morphisms: lifting, `>>`, `stack`, `repeat`, `@`, `fan` and `scan`.

Each composite holds its parts as submodules and combines their draws,
means and log-densities. Scoring follows the canonical path (see
`docs/runtime.md`): a chain scores its value under its last non-identity
part, after running every earlier part at its mean; `@` and `fan` add up
their branches' scores over the matching slices of the value; `scan`
runs the cell at its mean for every step but the last, which scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from torch import nn

from qvr_core.check.types import Arrow, Product, Seq, ValueType
from qvr_core.runtime.containers import NameTable
from qvr_core.runtime.morphisms import Morphism
from qvr_core.runtime.padding import lengths_for, real_positions
from qvr_core.runtime.tensors import Joiner, elem, event_shape, join, split, value_dtype


class Lift(Morphism):
    """A morphism `A -> B` applied pointwise along a sequence: `[A] -> [B]`.

    Parts already accept extra leading axes, so draws and means pass the
    `(B, L, ...)` tensor straight through; the log-density sums over L (over each
    example's real positions on a `Padded` input).
    """

    def __init__(self, inner: Morphism) -> None:
        arrow = Arrow(Seq(elem(inner.dom)), Seq(elem(inner.cod)))
        super().__init__(arrow, inner.label)
        self.inner = inner

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner._rsample(x)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner._mean(x)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return real_positions(self.inner._log_prob(x, value)).sum(-1)

    def value_support(self) -> str | None:
        return self.inner.value_support()


class Chain(Morphism):
    """Parts applied one after the other; subclasses say what the parts are."""

    def chain(self) -> Sequence[Morphism]:
        raise NotImplementedError

    def value_support(self) -> str | None:
        parts = [p for p in self.chain() if not p.passthrough]
        return parts[-1].value_support() if parts else None

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        for part in self.chain():
            x = part._rsample(x)
        return x

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        for part in self.chain():
            x = part._mean(x)
        return x

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        parts = list(self.chain())
        last = max((i for i, p in enumerate(parts) if not p.passthrough), default=None)
        if last is None:
            return self._zeros(x)
        for part in parts[:last]:
            x = part._mean(x)
        return parts[last]._log_prob(x, value)


class Compose(Chain):
    """`f >> g >> ...`: g consumes f's draw."""

    def __init__(self, arrow: Arrow, label: str, parts: Sequence[Morphism]) -> None:
        super().__init__(arrow, label)
        self.parts = nn.ModuleList(parts)

    def chain(self) -> Sequence[Morphism]:
        return list(self.parts)  # type: ignore[arg-type]  # a ModuleList of Morphisms


class Stack(Compose):
    """`stack(b, n)`: n copies of b, each compiled afresh with its own parameters."""

    @property
    def copies(self) -> nn.ModuleList:
        return self.parts


class Repeat(Chain):
    """`repeat(b, n)`: one b applied n times (parameters shared)."""

    def __init__(self, arrow: Arrow, label: str, body: Morphism, times: int) -> None:
        super().__init__(arrow, label)
        self.body = body
        self.times = times

    @property
    def n_steps(self) -> int:
        """How many times the body runs: quivers' name for it. `repeat(b)` leaves it at 1
        for the program's Python to set (an HMM's horizon), as quivers'
        `RepeatMorphism.n_steps` does."""
        return self.times

    @n_steps.setter
    def n_steps(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{self.label}: n_steps must be a whole number >= 1, not {value!r}")
        self.times = value

    def chain(self) -> Sequence[Morphism]:
        return [self.body] * self.times

    # One application at a time: `repeat(b, 1000000000)` must not first build a list of a
    # billion references (the resource model refuses what would not fit; this is the rest).
    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.times):
            x = self.body._rsample(x)
        return x

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.times):
            x = self.body._mean(x)
        return x

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        if self.body.passthrough or self.times < 1:
            return self._zeros(x)
        for _ in range(self.times - 1):
            x = self.body._mean(x)
        return self.body._log_prob(x, value)


class Parallel(Morphism):
    """Branches whose outputs sit side by side (the product convention)."""

    def __init__(self, arrow: Arrow, label: str, branches: Sequence[Morphism]) -> None:
        super().__init__(arrow, label)
        self.branches = nn.ModuleList(branches)

    def parts(self) -> list[Morphism]:
        return list(self.branches)  # type: ignore[arg-type]  # a ModuleList of Morphisms

    def value_support(self) -> str | None:
        """The branches' common narrower support; None unless every branch has the same."""
        found = {p.value_support() for p in self.parts()}
        return found.pop() if len(found) == 1 else None

    def inputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        raise NotImplementedError

    def _join(self, outs: list[torch.Tensor]) -> torch.Tensor:
        return join(outs, [b.cod for b in self.parts()])

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        pairs = zip(self.parts(), self.inputs(x), strict=True)
        return self._join([b._rsample(xi) for b, xi in pairs])

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        pairs = zip(self.parts(), self.inputs(x), strict=True)
        return self._join([b._mean(xi) for b, xi in pairs])

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        parts = self.parts()
        values = split(value, [b.cod for b in parts], self.cod)
        scores = [
            b._log_prob(xi, vi) for b, xi, vi in zip(parts, self.inputs(x), values, strict=True)
        ]
        return torch.stack(torch.broadcast_tensors(*scores)).sum(0)


class TensorProduct(Parallel):
    """`f @ g`: the input's columns are split by the widths of `dom f`, `dom g`."""

    def inputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        return split(x, [b.dom for b in self.parts()], self.dom)


class Fan(Parallel):
    """`fan(f, g, ...)` or `fan(group)`: every branch reads the same input.

    Branches listed in `reversed_branches` (the bidirectional convention,
    decided by the checker) read the input sequence reversed along L.
    """

    def __init__(
        self,
        arrow: Arrow,
        label: str,
        branches: Sequence[Morphism],
        reversed_branches: frozenset[int] = frozenset(),
    ) -> None:
        super().__init__(arrow, label, branches)
        self.reversed_branches = reversed_branches

    def inputs(self, x: torch.Tensor) -> list[torch.Tensor]:
        if not self.reversed_branches:
            return [x] * len(self.branches)
        flipped = torch.flip(x, dims=(seq_axis(x, self.dom),))
        return [flipped if i in self.reversed_branches else x for i in range(len(self.branches))]

    def _realign(self, values: list[torch.Tensor]) -> list[torch.Tensor]:
        """A reversed branch that keeps every position (`scanl`) wrote position t of the
        flipped input at t: flip it back so that position t describes the same token."""
        if not self.reversed_branches or not isinstance(self.cod, Seq):
            return values
        return [
            torch.flip(v, dims=(seq_axis(v, b.cod),)) if i in self.reversed_branches else v
            for i, (b, v) in enumerate(zip(self.parts(), values, strict=True))
        ]

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        pairs = zip(self.parts(), self.inputs(x), strict=True)
        return self._join(self._realign([b._rsample(xi) for b, xi in pairs]))

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        pairs = zip(self.parts(), self.inputs(x), strict=True)
        return self._join(self._realign([b._mean(xi) for b, xi in pairs]))

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        parts = self.parts()
        values = self._realign(split(value, [b.cod for b in parts], self.cod))
        scores = [
            b._log_prob(xi, vi) for b, xi, vi in zip(parts, self.inputs(x), values, strict=True)
        ]
        return torch.stack(torch.broadcast_tensors(*scores)).sum(0)


def seq_axis(x: torch.Tensor, t: ValueType) -> int:
    """The L axis of a packed sequence value (just before the columns, if any)."""
    return x.ndim - 1 - len(event_shape(elem(t)))


class Scan(Morphism):
    """`scan(c)`: h0 = 0, then h = c(concat(x_t, h)) for each t; returns the final h.

    With `reverse` (written, or the bidirectional convention the checker
    applied) t runs from L-1 down to 0. With `learned_init` (quivers'
    `init=learned`) h0 is a parameter, zeros at first, instead of zeros.
    On a `Padded` input each example is read within its length: the state
    stops changing after its last real position, and read right to left it
    starts at that position, not in the padding.
    """

    def __init__(
        self,
        arrow: Arrow,
        label: str,
        cell: Morphism,
        reverse: bool,
        learned_init: bool = False,
    ) -> None:
        super().__init__(arrow, label)
        self.cell = cell
        self.reverse = reverse
        self.step_type: Product = elem(arrow.dom)
        self.state_type: Product = elem(cell.cod)
        self._joiner = Joiner([self.step_type, self.state_type])
        self.init: nn.Parameter | None = None
        if learned_init:
            shape = event_shape(self.state_type)
            self.init = nn.Parameter(torch.zeros(shape, dtype=value_dtype(self.state_type)))

    def _axis(self, x: torch.Tensor) -> int:
        return seq_axis(x, self.dom)

    def _reading(self, x: torch.Tensor) -> _Reading:
        """The order this scan reads x's positions in, given the lengths in effect."""
        axis = self._axis(x)
        lengths = lengths_for(tuple(x.shape[:axis]), x.shape[axis])
        return _Reading(x.shape[axis], axis, self.reverse, lengths)

    def _h0(self, x: torch.Tensor) -> torch.Tensor:
        shape = (*x.shape[: self._axis(x)], *event_shape(self.state_type))
        if self.init is not None:
            return self.init.to(x.device).expand(shape)
        return torch.zeros(shape, dtype=value_dtype(self.state_type), device=x.device)

    def _input(self, x_t: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self._joiner([x_t, h])

    def _run(
        self,
        x: torch.Tensor,
        cell: Callable[[torch.Tensor], torch.Tensor],
        last_state: bool = True,
    ) -> tuple[list[torch.Tensor], list[torch.Tensor], _Reading]:
        """The steps' inputs and the state after each step, in reading order; padding
        steps keep the state. Without `last_state` the cell is not applied to the last
        step's input (a density scores that input itself: one cell application fewer)."""
        reading = self._reading(x)
        xs = reading.reorder(x, x.ndim - 1 - reading.axis).unbind(reading.axis)
        h = self._h0(x)
        inputs, states = [], []
        event = len(event_shape(self.state_type))
        for s, x_s in enumerate(xs):
            inputs.append(self._input(x_s, h))
            if not last_state and s == len(xs) - 1:
                break
            h = reading.keep_past_end(s, cell(inputs[-1]), h, event)
            states.append(h)
        return inputs, states, reading

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        _, states, _ = self._run(x, self.cell._rsample)
        return states[-1] if states else self._h0(x)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        _, states, _ = self._run(x, self.cell._mean)
        return states[-1] if states else self._h0(x)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """The final state scored under the cell's step at each example's last real
        position (the state before it computed, as `_mean` computes it)."""
        inputs, _, reading = self._run(x, self.cell._mean, last_state=False)
        if not inputs:
            return self._zeros(x)
        return self.cell._log_prob(reading.last_real(inputs), value)


class ScanAll(Scan):
    """`scanl(c)`: the states of `scan(c)` at every position, `(..., L, *state)`.

    Position t holds the state after reading position t; reading right to
    left, the state after reading L-1 down to t (within each example's length
    on a `Padded` input). Its log-density is the exact joint density of the
    state chain: each h_t scored under c(x_t, h_{t-1}) with h_{t-1} the value's
    own previous state, all positions at once; padded positions are not scored.
    """

    def _states(
        self, x: torch.Tensor, cell: Callable[[torch.Tensor], torch.Tensor]
    ) -> torch.Tensor:
        _, states, reading = self._run(x, cell)
        axis = reading.axis
        if not states:
            shape = (*x.shape[:axis], 0, *event_shape(self.state_type))
            return torch.zeros(shape, dtype=value_dtype(self.state_type), device=x.device)
        stacked = torch.stack(states, dim=axis)
        return reading.reorder(stacked, len(event_shape(self.state_type)))

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self._states(x, self.cell._rsample)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return self._states(x, self.cell._mean)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        reading = self._reading(x)
        axis = reading.axis
        if x.shape[axis] == 0:
            return self._zeros(x)
        event = len(event_shape(self.state_type))
        xs = reading.reorder(x, x.ndim - 1 - axis)
        ordered = reading.reorder(value, event)  # h_s in reading order
        h0 = self._h0(x).unsqueeze(axis)
        previous = torch.cat([h0, ordered.narrow(axis, 0, ordered.shape[axis] - 1)], axis)
        # in reading order each example's real positions come first, as in position order
        return real_positions(self.cell._log_prob(self._input(xs, previous), ordered)).sum(-1)


class _Reading:
    """In which order a scan reads the L positions of a batch of sequences: left to right
    or right to left, each example within its length when some are padded."""

    def __init__(self, size: int, axis: int, reverse: bool, lengths: torch.Tensor | None):
        self.size, self.axis, self.reverse, self.lengths = size, axis, reverse, lengths

    def _order(self) -> torch.Tensor | None:
        """`(..., L)`: the position read at each step (its own inverse: each example's real
        positions reversed, its padding in place), None for the identity or a plain flip."""
        if self.lengths is None or not self.reverse:
            return None
        steps = torch.arange(self.size, device=self.lengths.device)
        last = self.lengths[..., None] - 1
        return torch.where(steps <= last, last - steps, steps)

    def reorder(self, v: torch.Tensor, trailing: int) -> torch.Tensor:
        """A per-position tensor (`trailing` axes after L) in reading order, or a
        per-step one back in position order: the permutation is its own inverse."""
        if not self.reverse:
            return v
        order = self._order()
        if order is None:
            return v.flip(self.axis)
        index = order.reshape(*order.shape, *[1] * trailing)
        index = index.expand(*v.shape[: self.axis], self.size, *v.shape[self.axis + 1 :])
        return v.gather(self.axis, index)

    def last_real(self, steps: list[torch.Tensor]) -> torch.Tensor:
        """Of per-step tensors, each example's at its last real step (the last step
        when nothing is padded)."""
        if self.lengths is None:
            return steps[-1]
        stacked = torch.stack(steps, self.axis)
        trailing = stacked.ndim - self.axis - 1
        last = (self.lengths - 1).reshape(*self.lengths.shape, 1, *[1] * trailing)
        last = last.expand(*stacked.shape[: self.axis], 1, *stacked.shape[self.axis + 1 :])
        return stacked.gather(self.axis, last).squeeze(self.axis)

    def keep_past_end(
        self, step: int, new: torch.Tensor, old: torch.Tensor, trailing: int
    ) -> torch.Tensor:
        """The new state where step reads a real position, the old one in the padding."""
        if self.lengths is None:
            return new
        real = (step < self.lengths).reshape(*self.lengths.shape, *[1] * trailing)
        return torch.where(real, new, old)


class Definition(Morphism):
    """An exported `let`: its body, with the declared morphisms' table registered first.

    Gives an exported let the same parameter names as a program
    (`morphisms.<name>.<parameter>`).
    """

    def __init__(self, label: str, body: Morphism, leaves: Mapping[str, Morphism]) -> None:
        super().__init__(Arrow(body.dom, body.cod), label)
        self.morphisms = NameTable(dict(sorted(leaves.items())))
        self.body = body

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self.body._rsample(x)

    def _mean(self, x: torch.Tensor) -> torch.Tensor:
        return self.body._mean(x)

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        return self.body._log_prob(x, value)
