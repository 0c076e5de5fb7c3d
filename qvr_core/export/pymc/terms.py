"""PyTensor text for checked `let`/`score` terms, as the PyMC export writes them.

Each builtin function and operator is written as the PyTensor expression that
computes what qvr's runtime computes (`qvr_core/runtime/functions.py`): torch's
`round` rounds half to even and so does `pt.round`; a comparison or `&&` is 0 or
1 as a float64, as qvr's `real` makes it; `softplus` is `log1p(exp(x))`; a
one-argument `min`/`max` reduces every axis. A value a term reads is a Python
name the caller chooses (`names`); a gather along a one-entry plate, which has no
axis in qvr, is written on the axis put back (`pt.expand_dims`), as the runtime's
`gather` does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from types import FunctionType

from qvr_core.builtins import FUNCTIONS as BUILTINS
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
from qvr_core.export.densities import density_text
from qvr_core.export.named import named
from qvr_core.export.pymc.families import family_call

# How tightly an expression binds, to write only the parentheses Python needs.
_ADD, _MUL, _UNARY, _POWER, _ATOM = 1, 2, 3, 4, 5

Fn = Callable[[list[str], int | None], str]


def _unary(template: str) -> Fn:
    return lambda a, _axis: template.format(x=a[0])


def _reduce(fn: str) -> Fn:
    """The whole value (qvr's `sum(x)`), or one axis (`x.sum(0)`)."""
    return lambda a, axis: f"{fn}({a[0]})" if axis is None else f"{fn}({a[0]}, axis={axis})"


def _extreme(one: str, two: str) -> Fn:
    """One argument: the smallest (largest) entry of all; two: elementwise."""
    return lambda a, _axis: f"{one}({a[0]})" if len(a) == 1 else f"{two}({a[0]}, {a[1]})"


def _power(a: list[str], _axis: int | None) -> str:
    return f"pt.pow({a[0]}, {a[1]})"


def _add_diag(a: list[str], _axis: int | None) -> str:
    return f"({a[0]}) + ({a[1]}) * pt.eye(({a[0]}).shape[-1])"


def _matvec(a: list[str], _axis: int | None) -> str:
    return f"pt.dot({a[0]}, {a[1]})"


def _lags(a: list[str], _axis: int | None) -> str:
    x, count = f"pt.as_tensor({a[0]})", f"int({a[1]})"
    before = f"{x}[..., : {x}.shape[-1] - k - 1]"
    shifted = f"pt.concatenate([pt.zeros_like({x}[..., : k + 1]), {before}], axis=-1)"
    return f"pt.stack([{shifted} for k in range({count})], axis=-1)"


def _tail(a: list[str], _axis: int | None) -> str:
    return f"pt.as_tensor({a[0]})[..., pt.as_tensor({a[0]}).shape[-1] - int({a[1]}) :]"


def _gp_exp_quad_cov(a: list[str], _axis: int | None) -> str:
    x, alpha, rho = a
    gaps = f"(pt.as_tensor({x})[:, None] - pt.as_tensor({x})[None, :])"
    return f"({alpha}) ** 2 * pt.exp(-0.5 * ({gaps} / ({rho})) ** 2)"


def _matern(nu: int) -> Fn:
    """Stan's gp_matern32_cov (`nu` 3) or gp_matern52_cov (5) as PyTensor text, of
    r = sqrt(nu) |x_i - x_j| / rho (as `runtime.functions._matern`)."""

    def write(a: list[str], _axis: int | None) -> str:
        x, alpha, rho = a
        d = f"pt.abs(pt.as_tensor({x})[:, None] - pt.as_tensor({x})[None, :])"
        r = f"({nu}.0 ** 0.5 * {d} / ({rho}))"
        poly = f"1.0 + {r}" + (f" + {r} ** 2 / 3.0" if nu == 5 else "")
        return f"({alpha}) ** 2 * ({poly}) * pt.exp(-{r})"

    return write


class _PyMCFunctions:
    """Every builtin function of the registry as PyTensor text, named after its entry."""

    sigmoid = _unary("pm.math.sigmoid({x})")
    tanh = _unary("pt.tanh({x})")
    exp = _unary("pt.exp({x})")
    expm1 = _unary("pt.expm1({x})")
    log = _unary("pt.log({x})")
    log1p = _unary("pt.log1p({x})")
    log2 = _unary("pt.log2({x})")
    log10 = _unary("pt.log10({x})")
    sqrt = _unary("pt.sqrt({x})")
    rsqrt = _unary("pt.reciprocal(pt.sqrt({x}))")
    square = _unary("pt.square({x})")
    abs = _unary("pt.abs({x})")
    sign = _unary("pt.sign({x})")
    reciprocal = _unary("pt.reciprocal({x})")
    sin = _unary("pt.sin({x})")
    cos = _unary("pt.cos({x})")
    tan = _unary("pt.tan({x})")
    asin = _unary("pt.arcsin({x})")
    acos = _unary("pt.arccos({x})")
    atan = _unary("pt.arctan({x})")
    sinh = _unary("pt.sinh({x})")
    cosh = _unary("pt.cosh({x})")
    asinh = _unary("pt.arcsinh({x})")
    acosh = _unary("pt.arccosh({x})")
    atanh = _unary("pt.arctanh({x})")
    floor = _unary("pt.floor({x})")
    ceil = _unary("pt.ceil({x})")
    round = _unary("pt.round({x})")  # half to even, as torch.round
    trunc = _unary("pt.trunc({x})")
    erf = _unary("pt.erf({x})")
    erfc = _unary("pt.erfc({x})")
    erfinv = _unary("pt.erfinv({x})")
    lgamma = _unary("pt.gammaln({x})")
    digamma = _unary("pt.psi({x})")
    relu = _unary("pt.maximum({x}, 0.0)")
    softplus = _unary("pt.softplus({x})")
    logsigmoid = _unary("-pt.softplus(-({x}))")
    softsign = _unary("({x}) / (1.0 + pt.abs({x}))")
    gelu = _unary("0.5 * ({x}) * (1.0 + pt.erf(({x}) / np.sqrt(2.0)))")  # torch's exact gelu
    silu = _unary("({x}) * pm.math.sigmoid({x})")
    elu = _unary("pt.switch(pt.gt({x}, 0), {x}, pt.expm1({x}))")
    selu = _unary(
        "1.0507009873554805 * pt.switch(pt.gt({x}, 0), {x}, 1.6732632423543772 * pt.expm1({x}))"
    )
    mish = _unary("({x}) * pt.tanh(pt.softplus({x}))")
    relu6 = _unary("pt.clip({x}, 0.0, 6.0)")
    sum = _reduce("pt.sum")
    mean = _reduce("pt.mean")
    prod = _reduce("pt.prod")
    logsumexp = _reduce("pm.math.logsumexp")
    softmax = _unary("pt.special.softmax({x}, axis=-1)")
    log_softmax = _unary("pt.special.log_softmax({x}, axis=-1)")
    cumsum = _unary("pt.cumsum({x}, axis=-1)")
    sort = _unary("pt.sort({x}, axis=-1)")
    normalize = _unary("({x}) / pt.sum({x}, axis=-1, keepdims=True)")
    layer_norm = _unary(  # torch's layer_norm without gain or bias: biased variance, eps 1e-5
        "(({x}) - pt.mean({x}, axis=-1, keepdims=True))"
        " / pt.sqrt(pt.var({x}, axis=-1, keepdims=True) + 1e-5)"
    )
    min = _extreme("pt.min", "pt.minimum")
    max = _extreme("pt.max", "pt.maximum")
    pow = _power
    # a Gaussian process's linear algebra (a covariance, its jitter and Cholesky factor)
    gp_exp_quad_cov = _gp_exp_quad_cov
    gp_matern32_cov = _matern(3)
    gp_matern52_cov = _matern(5)
    add_diag = _add_diag
    cholesky = _unary("pt.linalg.cholesky({x})")
    matvec = _matvec
    # a series's lagged values and its last entries (slices, no scan)
    lags = _lags
    tail = _tail


#: The builtin functions PyTensor writes, by name: all but a recurrence (`lag` and
#: `linear_recurrence` are written with `pytensor.scan`, which the export does not write
#: yet: QVR701 at the call); `lags` and `tail` are slices.
FUNCTIONS: dict[str, Fn] = {
    name: fn for name, fn in named(_PyMCFunctions, BUILTINS, FunctionType).items()
}


class _NotWritten:
    """Builtins PyMC has a way to say that the export does not write yet, and why."""

    ode_rk45 = (
        "PyMC solves an ODE with pm.ode.DifferentialEquation, whose right-hand side is a "
        "Python function, which the export does not write from a define yet"
    )
    ode_rk45_tol = ode_rk45
    ode_bdf = (
        "PyMC solves a stiff ODE with pm.ode.DifferentialEquation (scipy's odeint, LSODA) or "
        "sunode's CVODES, whose right-hand side is a Python function, which the export does "
        "not write from a define yet"
    )
    ode_bdf_tol = ode_bdf


NOT_WRITTEN: dict[str, str] = named(_NotWritten, BUILTINS, str)

#: A log density in PyMC: its distribution (`.dist`) scored at the value.
LOGP = "pm.logp({dist}, {value})"

#: The comparison and logical operators, each a PyTensor function of two values.
_COMPARE = {"==": "pt.eq", "!=": "pt.neq", "<": "pt.lt", "<=": "pt.le", ">": "pt.gt", ">=": "pt.ge"}


def number(value: float) -> str:
    """A float literal Python reads back exactly (`inf` and `nan` through numpy)."""
    if value != value:
        return "np.nan"
    if value in (float("inf"), float("-inf")):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(float(value))


class TermPrinter:
    """Writes terms whose names are Python values: `names[qvr name]`; an index naming one
    of `plates` takes every entry of its axis, and one naming a plate in `one_entry`
    (a plate of one entry, which has no axis) none. `integers` are the names that hold
    whole numbers as integers (index data, discrete draws, enumerated values): any other
    index is cast."""

    def __init__(
        self,
        names: Mapping[str, str],
        plates: Collection[str],
        one_entry: Collection[str],
        integers: Collection[str],
    ) -> None:
        self.names = names
        self.plates = plates
        self.one_entry = one_entry
        self.integers = integers

    def __call__(self, term: Term) -> str:
        return self._write(term)[0]

    def name(self, name: str) -> str:
        return self.names.get(name, name)

    def _write(self, term: Term) -> tuple[str, int]:
        match term:
            case Num(value=value):
                text = number(value)
                return text, _UNARY if text.startswith("-") else _ATOM
            case Ref(name=name):
                return self.name(name), _ATOM
            case Unary(op="-", operand=operand):
                return f"-{self._at(operand, _UNARY)}", _UNARY
            case Unary(operand=operand):  # `not`: 1 where 0, else 0
                return f'pt.eq({self(operand)}, 0).astype("float64")', _ATOM
            case Op(op=op, left=left, right=right):
                return self._op(op, left, right)
            case Call(density=density, args=args) if density is not None:
                written = density_text(term, [self(a) for a in args], family_call, LOGP)
                assert written is not None  # problems.py refuses a family PyMC lacks
                return written, _ATOM
            case Call(fn=fn, args=args, axis=axis):
                return FUNCTIONS[fn]([self(a) for a in args], axis), _ATOM
            case Gather():
                return self.gather(term.base, term.indices, term.plates), _ATOM
            case Stack(items=items):
                if all(isinstance(i, Num) for i in items):
                    return f"np.array([{', '.join(self(i) for i in items)}])", _ATOM
                parts = ", ".join(self(i) for i in items)
                return f"pt.stack(pt.broadcast_arrays({parts}), axis=-1)", _ATOM
            case Comprehension():
                raise AssertionError("problems.py refuses a factor expression")
            case Fold():
                raise AssertionError("problems.py refuses a fold")

    def _at(self, term: Term, level: int) -> str:
        """`term` written to bind at least as tightly as `level`."""
        text, own = self._write(term)
        return text if own >= level else f"({text})"

    def _op(self, op: str, left: Term, right: Term) -> tuple[str, int]:
        if op in ("+", "-"):
            return f"{self._at(left, _ADD)} {op} {self._at(right, _MUL)}", _ADD
        if op in ("*", "/"):
            return f"{self._at(left, _MUL)} {op} {self._at(right, _UNARY)}", _MUL
        if op == "%":  # the sign of the divisor, as torch.remainder
            return f"pt.mod({self(left)}, {self(right)})", _ATOM
        if op in _COMPARE:
            return f'{_COMPARE[op]}({self(left)}, {self(right)}).astype("float64")', _ATOM
        both = "pt.and_" if op == "&&" else "pt.or_"
        flags = f"pt.neq({self(left)}, 0), pt.neq({self(right)}, 0)"
        return f'{both}({flags}).astype("float64")', _ATOM

    def gather(
        self, base: str, indices: tuple[Term | str | None, ...], plates: tuple[str, ...]
    ) -> str:
        """`base[i, :, j]`: a None index (or a plate's name) takes every entry of its axis,
        a value index the entries it holds; a one-entry plate's axis is put back first
        where a value indexes it, and skipped where a plate's name does."""
        value = self.name(base)
        keys: list[str] = []
        for k, index in enumerate(indices):
            every = index is None or (isinstance(index, str) and index in self.plates)
            if k < len(plates) and plates[k] in self.one_entry:
                if every:
                    continue
                value = f"pt.expand_dims({value}, {len(keys)})"
            if every:
                keys.append(":")
            else:
                assert index is not None
                keys.append(self._index(index))
        if not keys:
            return value
        if all(k == ":" for k in keys):
            return value
        return f"{value}[{', '.join(keys)}]"

    def _index(self, term: Term | str) -> str:
        """An index that is not an integer value is a whole number as a float in qvr
        (checked there); PyTensor indexes with integers."""
        name = term if isinstance(term, str) else term.name if isinstance(term, Ref) else None
        if name is not None and name in self.integers:
            return self.name(name)
        if isinstance(term, Num):
            return str(int(term.value))
        text = self.name(term) if isinstance(term, str) else self(term)
        return f'pt.cast({text}, "int64")'
