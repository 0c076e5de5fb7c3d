"""How QVR values are laid out as tensors (spec: "Tensor conventions").

A value of product type P is one *packed* tensor with the factors side by
side on the last axis: a FinSet factor takes one column holding its index,
a continuous factor of dimension d takes d columns. Batch axes come first;
a sequence adds a length axis L just before the columns.

- A single FinSet factor is an index and has no column axis: `(B,)`, `(B, L)`.
- A product of FinSets only is int64: `Source * Target` is `(B, 2)`.
- A product with a continuous factor is float; its FinSet columns hold the
  index as an exact float (indices below 2**24) and are cast back to int64
  wherever a factor is taken out (`split`, `features`).

Keeping one tensor per value (rather than a list of factors) means the
user-facing layout and the internal one are the same, so matching by
dimension (`FwdHidden * BwdHidden` into `Combined`) costs nothing. Every
function here accepts any number of leading batch axes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import torch
import torch.nn.functional as F
from torch.distributions.transforms import Transform

from qvr_core.check.types import ObjectType, Product, Seq, ValueType
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.value_checks import check_within

MAX_EXACT_INDEX = 2**24  # float32 holds every integer below this exactly


def elem(t: ValueType) -> Product:
    """The element product of a value type (the type itself when it is not a sequence)."""
    p = t.elem if isinstance(t, Seq) else t
    if not isinstance(p, Product):
        raise QvrRuntimeError(f"a {t.label} value has no tensor layout")
    return p


def is_index(p: Product) -> bool:
    """A single FinSet factor: packed as a bare index without a column axis."""
    return len(p.factors) == 1 and p.factors[0].discrete


def event_shape(p: Product) -> tuple[int, ...]:
    return () if is_index(p) else (p.width,)


def value_dtype(p: Product) -> torch.dtype:
    return torch.int64 if p.discrete else torch.get_default_dtype()


def core_ndim(t: ValueType) -> int:
    """Axes after the batch: the sequence axis (if any) and the column axis (if any)."""
    return (1 if isinstance(t, Seq) else 0) + len(event_shape(elem(t)))


def batch_shape(x: torch.Tensor, t: ValueType) -> tuple[int, ...]:
    return tuple(x.shape[: x.ndim - core_ndim(t)])


def columns(x: torch.Tensor, p: Product) -> torch.Tensor:
    """The value with an explicit column axis, `(..., width)`."""
    return x.unsqueeze(-1) if is_index(p) else x


def _unpack(cols: torch.Tensor, p: Product) -> torch.Tensor:
    """Columns `(..., width)` to the packed layout and dtype of p."""
    if p.discrete:
        cols = cols if not cols.is_floating_point() else cols.round()
        cols = cols.long()
    elif not cols.is_floating_point():
        cols = cols.to(torch.get_default_dtype())
    return cols.squeeze(-1) if is_index(p) else cols


def split(x: torch.Tensor, parts: Sequence[ValueType], whole: ValueType) -> list[torch.Tensor]:
    """Split a packed value of type `whole` into consecutive groups of factors."""
    cols = columns(x, elem(whole))
    out: list[torch.Tensor] = []
    start = 0
    for t in parts:
        p = elem(t)
        out.append(_unpack(cols[..., start : start + p.width], p))
        start += p.width
    if start != cols.shape[-1]:
        raise QvrRuntimeError(
            f"cannot split {elem(whole).label} ({cols.shape[-1]} columns) into "
            f"{' * '.join(elem(t).label for t in parts)} ({start} columns)"
        )
    return out


def join(values: Sequence[torch.Tensor], parts: Sequence[ValueType]) -> torch.Tensor:
    """Pack values of the given types side by side (the product convention)."""
    return Joiner(parts)(values)


class Joiner:
    """`join` for values of these types, with what the types decide worked out once (a
    recurrence joins its input and state at every step). A class, not a closure, so a
    compiled program that keeps one still pickles (chains run in other processes)."""

    def __init__(self, parts: Sequence[ValueType]) -> None:
        products = [elem(t) for t in parts]
        self.indices = [is_index(p) for p in products]
        self.discrete = all(p.discrete for p in products)

    def __call__(self, values: Sequence[torch.Tensor]) -> torch.Tensor:
        if len(values) == 1:
            return values[0]
        return _pack(values, self.indices, self.discrete)


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape `shapes` broadcast to, as `torch.broadcast_shapes` gives it (RuntimeError
    when they do not broadcast), without its first call's import of sympy (0.3-0.5 s
    of every run's start)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, size in enumerate(shape, start=ndim - len(shape)):
            if size == out[i] or size == 1:
                continue
            if out[i] != 1:
                raise RuntimeError(f"shapes {[tuple(s) for s in shapes]} do not broadcast")
            out[i] = int(size)
    return tuple(out)


def unconstrained_shape(transform: Transform, shape: Sequence[int]) -> tuple[int, ...]:
    """The shape `transform` maps onto values of `shape` from: its inverse's result on
    zeros. torch's `inverse_shape` imports sympy on its first call through an affine map
    (0.3-0.5 s of a run's start); a map whose inverse refuses zeros (a Cholesky factor)
    is asked for its `inverse_shape` after all."""
    try:
        with torch.no_grad():
            return tuple(transform.inv(torch.zeros(tuple(shape))).shape)
    except (RuntimeError, ValueError):
        return tuple(transform.inverse_shape(torch.Size(shape)))


def _pack(values: Sequence[torch.Tensor], indices: list[bool], discrete: bool) -> torch.Tensor:
    dtype = torch.int64 if discrete else torch.get_default_dtype()
    cols = [v.unsqueeze(-1) if index else v for v, index in zip(values, indices, strict=True)]
    cols = [c if c.dtype == dtype else c.to(dtype) for c in cols]  # a call saved per step
    leads = [c.shape[:-1] for c in cols]
    if any(lead != leads[0] for lead in leads[1:]):  # broadcasting costs ~5% of an RNN step
        lead = broadcast_shape(*leads)
        cols = [c.expand(*lead, c.shape[-1]) for c in cols]
    return torch.cat(cols, dim=-1)


def feature_width(p: Product) -> int:
    """Width of the float features a parameter network reads.

    A FinSet factor of N values is one-hot (N features), a continuous one of
    dimension d gives d features: either way its `size`.
    """
    return sum(f.size for f in p.factors)


def features(x: torch.Tensor, p: Product) -> torch.Tensor:
    """Float features of a packed value: FinSet factors one-hot, continuous ones as they are."""
    dtype = torch.get_default_dtype()
    if p.continuous:
        return x
    cols = columns(x, p)
    out: list[torch.Tensor] = []
    start = 0
    for f in p.factors:
        c = cols[..., start : start + f.width]
        if f.discrete:
            index = (c.round() if c.is_floating_point() else c).long().squeeze(-1)
            out.append(F.one_hot(index, f.size).to(dtype))
        else:
            out.append(c)
        start += f.width
    return out[0] if len(out) == 1 else torch.cat(out, dim=-1)


# ---------------------------------------------------------------- checking


def describe(t: ValueType, batch: Sequence[int] | None = None) -> str:
    """The shape a value of type t must have: `(B, L) int64`, `(4, 128) float32`."""
    p = elem(t)
    dims = [str(b) for b in batch] if batch is not None else ["B"]
    if isinstance(t, Seq):
        dims.append("L")
    dims += [str(w) for w in event_shape(p)]
    dtype = str(value_dtype(p)).removeprefix("torch.")
    return f"({', '.join(dims)}{',' if len(dims) == 1 else ''}) {dtype}"


def received(x: object) -> str:
    if not isinstance(x, torch.Tensor):
        return f"a {type(x).__name__}, not a tensor"
    dims = ", ".join(str(d) for d in x.shape)
    comma = "," if x.ndim == 1 else ""
    return f"({dims}{comma}) {str(x.dtype).removeprefix('torch.')}"


def validate(
    x: object,
    t: ValueType,
    what: str,
    *,
    batch: Sequence[int] | None = None,
    site: str | None = None,
) -> torch.Tensor:
    """Check a user-supplied value against its type and return it in the packed dtype.

    Integer tensors of another width are cast to int64. When `batch` is given
    the value's batch axes must end with it (extra leading axes, e.g. sample
    draws, are allowed).
    """
    expected = describe(t, batch)

    def fail(reason: str) -> QvrRuntimeError:
        return QvrRuntimeError(
            f"{what}: expected {expected} ({t.label}), got {received(x)}: {reason}",
            site=site,
            expected=expected,
            received=received(x),
        )

    if not isinstance(x, torch.Tensor):
        raise fail("pass a torch tensor")
    p = elem(t)
    need = core_ndim(t) + 1
    if x.ndim < need:
        raise fail(_rank_hint(t, x.ndim, need))
    if event_shape(p) and x.shape[-1] != p.width:
        raise fail(f"the last axis must have {p.width} columns ({_columns_text(p)})")
    if batch is not None:
        got = batch_shape(x, t)
        if tuple(got[len(got) - len(batch) :]) != tuple(batch) or len(got) < len(batch):
            raise fail(f"the batch {tuple(got)} does not match the input's batch {tuple(batch)}")
    if x.dtype == torch.bool or x.is_complex():
        raise fail("expected numbers")
    if p.discrete and x.is_floating_point():
        raise fail("FinSet values are integer indices; pass an int64 tensor")
    x = x.long() if p.discrete else x.to(torch.get_default_dtype())
    _check_indices(x, p, fail)
    return x


def _rank_hint(t: ValueType, got: int, need: int) -> str:
    if isinstance(t, Seq):
        return f"a sequence needs {need} axes (batch, length{', columns' if need > 2 else ''})"
    return f"needs at least {need} axes"


def _columns_text(p: Product) -> str:
    return " + ".join(f"{f.name} {f.width}" for f in p.factors)


def _check_indices(x: torch.Tensor, p: Product, fail: Callable[[str], QvrRuntimeError]) -> None:
    if all(not f.discrete for f in p.factors) or x.numel() == 0:
        return
    cols = columns(x, p)
    start = 0
    for f in p.factors:
        if f.discrete:
            check_within(cols[..., start], 0, f.size - 1, partial(_out_of_range, f, fail))
        start += f.width


def _out_of_range(
    f: ObjectType, fail: Callable[[str], QvrRuntimeError], bad: int
) -> QvrRuntimeError:
    return fail(f"index {bad} is out of range for {f.name} (FinSet {f.size}: 0..{f.size - 1})")


# ---------------------------------------------------------------- examples


def example(
    t: ValueType,
    batch: int,
    seq_len: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """A random valid value of type t: uniform indices, standard normal reals, and so on."""
    p = elem(t)
    lead = (batch, seq_len) if isinstance(t, Seq) else (batch,)
    dtype = torch.get_default_dtype()
    parts: list[torch.Tensor] = []
    for f in p.factors:
        if f.discrete:
            parts.append(torch.randint(0, f.size, lead, generator=generator))
            continue
        z = torch.randn((*lead, f.size), generator=generator, dtype=dtype)
        if f.kind == "positive":
            z = z.exp()
        elif f.kind == "unit":
            z = torch.sigmoid(z)
        elif f.kind == "simplex":
            z = torch.softmax(z, dim=-1)
        parts.append(z)
    singles = [Product((f,), (f.name,)) for f in p.factors]
    return join(parts, singles)


def product_of(parts: Sequence[ValueType]) -> ValueType:
    """The packed type of values of the given types side by side (a sequence if any is one)."""
    factors = tuple(f for t in parts for f in elem(t).factors)
    written = tuple(n for t in parts for n in elem(t).written)
    p = Product(factors, written)
    return Seq(p) if any(isinstance(t, Seq) for t in parts) else p


def cholesky_or_nan(m: torch.Tensor) -> torch.Tensor:
    """The lower Cholesky factor of each matrix of `m`, NaN for one that is not positive
    definite (a covariance whose length scale has run off, in floating point). The log
    density is then not a number, which a sampler rejects as it rejects a point outside
    the support; `torch.linalg.cholesky` would raise instead, after reading its check
    back into Python, a point at which a potential cannot be recorded."""
    lower, info = torch.linalg.cholesky_ex(m)
    failed = (info != 0)[..., None, None]
    return torch.where(failed, torch.full_like(lower, float("nan")), lower)
