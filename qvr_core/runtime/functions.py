"""The torch meaning of each builtin function and operator of `qvr_core.builtins`.

Each function is a static method named as its registry entry, so a name is
written once (in the registry) and looked up here by `getattr`;
`tests/builtins/test_agreement.py` checks that every registry entry has one and
nothing else is here. Reductions take the value whole (`axis` None) or along one
axis; rowwise ones act on the last axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from qvr_core.builtins import FUNCTIONS
from qvr_core.check.terms import Body
from qvr_core.runtime import ode
from qvr_core.runtime.ode_rhs import Builtins
from qvr_core.runtime.tensors import cholesky_or_nan

Fn = Callable[..., torch.Tensor]


def _whole(reduce: Callable[..., torch.Tensor]) -> Fn:
    def run(x: torch.Tensor, axis: int | None = None) -> torch.Tensor:
        return reduce(x) if axis is None else reduce(x, axis)

    return run


def _matern(nu: int, x: torch.Tensor, alpha: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """Stan's Matérn covariance of the points x (the last axis) for `nu` 3 (its 3/2
    kernel, alpha² (1 + r) exp(-r)) or 5 (5/2: alpha² (1 + r + r² / 3) exp(-r)), with
    r = sqrt(nu) |x_i - x_j| / rho."""
    x = x if x.is_floating_point() else x.to(torch.get_default_dtype())
    gaps = (x[..., :, None] - x[..., None, :]).abs()
    r = math.sqrt(nu) * gaps / torch.as_tensor(rho)[..., None, None]
    poly = 1.0 + r + (r * r / 3.0 if nu == 5 else 0.0)
    return torch.as_tensor(alpha)[..., None, None] ** 2 * poly * torch.exp(-r)


class Implementations:
    """One static method per builtin function (see the module docstring)."""

    sigmoid = staticmethod(torch.sigmoid)
    tanh = staticmethod(torch.tanh)
    exp = staticmethod(torch.exp)
    expm1 = staticmethod(torch.expm1)
    log = staticmethod(torch.log)
    log1p = staticmethod(torch.log1p)
    log2 = staticmethod(torch.log2)
    log10 = staticmethod(torch.log10)
    sqrt = staticmethod(torch.sqrt)
    rsqrt = staticmethod(torch.rsqrt)
    square = staticmethod(torch.square)
    abs = staticmethod(torch.abs)
    sign = staticmethod(torch.sign)
    reciprocal = staticmethod(torch.reciprocal)
    sin = staticmethod(torch.sin)
    cos = staticmethod(torch.cos)
    tan = staticmethod(torch.tan)
    asin = staticmethod(torch.asin)
    acos = staticmethod(torch.acos)
    atan = staticmethod(torch.atan)
    sinh = staticmethod(torch.sinh)
    cosh = staticmethod(torch.cosh)
    asinh = staticmethod(torch.asinh)
    acosh = staticmethod(torch.acosh)
    atanh = staticmethod(torch.atanh)
    floor = staticmethod(torch.floor)
    ceil = staticmethod(torch.ceil)
    round = staticmethod(torch.round)
    trunc = staticmethod(torch.trunc)
    erf = staticmethod(torch.erf)
    erfc = staticmethod(torch.erfc)
    erfinv = staticmethod(torch.erfinv)
    lgamma = staticmethod(torch.lgamma)
    digamma = staticmethod(torch.digamma)
    relu = staticmethod(torch.relu)
    softplus = staticmethod(F.softplus)
    logsigmoid = staticmethod(F.logsigmoid)
    softsign = staticmethod(F.softsign)
    gelu = staticmethod(F.gelu)
    silu = staticmethod(F.silu)
    elu = staticmethod(F.elu)
    selu = staticmethod(F.selu)
    mish = staticmethod(F.mish)
    relu6 = staticmethod(F.relu6)
    sum = staticmethod(_whole(torch.sum))
    mean = staticmethod(_whole(torch.mean))
    prod = staticmethod(_whole(torch.prod))

    @staticmethod
    def logsumexp(x: torch.Tensor, axis: int | None = None) -> torch.Tensor:
        return torch.logsumexp(x.reshape(-1), 0) if axis is None else torch.logsumexp(x, axis)

    @staticmethod
    def softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, -1)

    @staticmethod
    def log_softmax(x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, -1)

    @staticmethod
    def cumsum(x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, -1)

    @staticmethod
    def sort(x: torch.Tensor) -> torch.Tensor:
        return torch.sort(x, -1).values

    @staticmethod
    def layer_norm(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, x.shape[-1:])

    @staticmethod
    def normalize(x: torch.Tensor) -> torch.Tensor:
        return x / x.sum(-1, keepdim=True)

    @staticmethod
    def min(a: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        if b is None:
            return torch.amin(a, dim=tuple(range(a.dim()))) if a.dim() else a
        return torch.minimum(a, b)  # broadcasts; a 0-d number may stay on the CPU

    @staticmethod
    def max(a: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        if b is None:
            return torch.amax(a, dim=tuple(range(a.dim()))) if a.dim() else a
        return torch.maximum(a, b)

    @staticmethod
    def pow(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.pow(a, b)

    # A Gaussian process's linear algebra, on the last axes (any before them broadcast).

    @staticmethod
    def gp_exp_quad_cov(x: torch.Tensor, alpha: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
        x = x if x.is_floating_point() else x.to(torch.get_default_dtype())
        gaps = x[..., :, None] - x[..., None, :]
        scale = torch.as_tensor(rho)[..., None, None]
        return torch.as_tensor(alpha)[..., None, None] ** 2 * torch.exp(-0.5 * (gaps / scale) ** 2)

    @staticmethod
    def gp_matern32_cov(x: torch.Tensor, alpha: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
        return _matern(3, x, alpha, rho)

    @staticmethod
    def gp_matern52_cov(x: torch.Tensor, alpha: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
        return _matern(5, x, alpha, rho)

    @staticmethod
    def add_diag(m: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)
        return m + torch.as_tensor(d, dtype=m.dtype)[..., None, None] * eye

    @staticmethod
    def cholesky(m: torch.Tensor) -> torch.Tensor:
        return cholesky_or_nan(m)  # NaN, not an error, where m is not positive definite

    @staticmethod
    def matvec(m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return (m @ v[..., :, None])[..., 0]

    # A series along its last axis (a plate over time); a number before it broadcasts.

    @staticmethod
    def lag(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        x = x if x.is_floating_point() else x.to(torch.get_default_dtype())
        n = min(int(k), x.shape[-1])  # the checker wrote k as a whole number, 1 or more
        zeros = x.new_zeros((*x.shape[:-1], n))
        return torch.cat([zeros, x[..., : x.shape[-1] - n]], dim=-1)

    @staticmethod
    def lags(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        x = x if x.is_floating_point() else x.to(torch.get_default_dtype())
        steps = x.shape[-1]
        zeros = x.new_zeros((*x.shape[:-1], int(k)))  # the checker wrote L's size here
        padded = torch.cat([zeros, x], dim=-1)  # padded[j] = x[j - K]
        # entry [t, k] = x[t - k - 1] = padded[t + K - k - 1]: one slice per lag
        n = int(k)
        return torch.stack([padded[..., n - j - 1 : n - j - 1 + steps] for j in range(n)], -1)

    @staticmethod
    def tail(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        count = int(n)  # the checker wrote P's size here
        if count > x.shape[-1]:
            raise ValueError(f"tail: {count} entries of a series of {x.shape[-1]} (its last axis)")
        return x[..., x.shape[-1] - count :]

    @staticmethod
    def linear_recurrence(
        init: torch.Tensor, coef: torch.Tensor, drive: torch.Tensor
    ) -> torch.Tensor:
        # s[t] = coef * s[t - 1] + drive[t] is the composition of the steps (a, b): s -> a s +
        # b, with (0, init) at t = 0. Composing is associative, so a doubling scan (each
        # round composes every step with the one `offset` before it) gives every s[t] in
        # ceil(log2 T) rounds of whole-series operations: a gradient is O(T log T) work in
        # a few dozen tensor operations, where a loop would be T small ones. Only products
        # of coefficients appear (no division by them), so a small coef underflows to the
        # exact limit 0 instead of overflowing.
        dtype = drive.dtype if drive.is_floating_point() else torch.get_default_dtype()
        d = drive.to(dtype)
        c = torch.as_tensor(coef, dtype=dtype)[..., None]
        s0 = torch.as_tensor(init, dtype=dtype)[..., None]
        shape = torch.broadcast_shapes(d.shape, c.shape, s0.shape)
        t = shape[-1]
        if t == 0:
            return d.expand(shape)
        a = torch.cat([torch.zeros_like(c).expand(*shape[:-1], 1), c.expand(shape)[..., 1:]], -1)
        b = torch.cat([s0.expand(*shape[:-1], 1), d.expand(shape)[..., 1:]], -1)
        offset = 1
        while offset < t:
            b = torch.cat(
                [b[..., :offset], a[..., offset:] * b[..., :-offset] + b[..., offset:]], -1
            )
            a = torch.cat([a[..., :offset], a[..., offset:] * a[..., :-offset]], -1)
            offset *= 2
        return b

    # An ODE's solution at output times, its right-hand side a checked define (runtime/ode.py).

    @staticmethod
    def ode_rk45(
        f: Body, z0: torch.Tensor, t0: torch.Tensor, ts: torch.Tensor, theta: torch.Tensor
    ) -> torch.Tensor:
        return ode.ode_rk45(f, z0, t0, ts, theta, _builtins(), ode.RK45_DEFAULTS)

    @staticmethod
    def ode_rk45_tol(
        f: Body,
        z0: torch.Tensor,
        t0: torch.Tensor,
        ts: torch.Tensor,
        rtol: torch.Tensor,
        atol: torch.Tensor,
        max_num_steps: torch.Tensor,
        theta: torch.Tensor,
    ) -> torch.Tensor:
        tolerance = ode.tolerance_of(rtol, atol, max_num_steps)
        return ode.ode_rk45(f, z0, t0, ts, theta, _builtins(), tolerance)

    @staticmethod
    def ode_bdf(
        f: Body, z0: torch.Tensor, t0: torch.Tensor, ts: torch.Tensor, theta: torch.Tensor
    ) -> torch.Tensor:
        return ode.ode_bdf(f, z0, t0, ts, theta, _builtins(), ode.BDF_DEFAULTS)

    @staticmethod
    def ode_bdf_tol(
        f: Body,
        z0: torch.Tensor,
        t0: torch.Tensor,
        ts: torch.Tensor,
        rtol: torch.Tensor,
        atol: torch.Tensor,
        max_num_steps: torch.Tensor,
        theta: torch.Tensor,
    ) -> torch.Tensor:
        tolerance = ode.tolerance_of(rtol, atol, max_num_steps, "ode_bdf_tol")
        return ode.ode_bdf(f, z0, t0, ts, theta, _builtins(), tolerance)


def _builtins() -> Builtins:
    """What a solver's right-hand side evaluates its functions and operators with."""
    return Builtins(FUNCTION_IMPLEMENTATIONS, OPERATOR_FUNCTIONS)


#: The torch function of each operator of the registry (`OPERATORS`), by its symbol.
OPERATOR_FUNCTIONS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "+": torch.add,
    "-": torch.sub,
    "*": torch.mul,
    "/": torch.div,
    "%": torch.remainder,
    "==": torch.eq,
    "!=": torch.ne,
    "<": torch.lt,
    "<=": torch.le,
    ">": torch.gt,
    ">=": torch.ge,
    "&&": torch.logical_and,
    "||": torch.logical_or,
}
FUNCTION_IMPLEMENTATIONS: dict[str, Fn] = {
    name: getattr(Implementations, name) for name in FUNCTIONS
}
