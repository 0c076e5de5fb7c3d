"""Which QVR functions the term printer writes in Stan, and as what: tables named after
the builtins registry (`named`), so no function's name is written here as a string and a
function the registry adds is refused (with a located problem) until a row says how
Stan writes it with exactly qvr's meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from types import FunctionType

from qvr_core.builtins import FUNCTIONS as BUILTINS
from qvr_core.check.terms import Call, Num, Op, Term
from qvr_core.export.named import members, named
from qvr_core.text.span import Span


class _Elementwise:
    """QVR functions with a Stan function of the same meaning, entry by entry (Stan
    vectorises each over vectors and matrices), named after the registry's entry. Not
    `round`: torch rounds halves to even, Stan away from zero."""

    sigmoid = "inv_logit"
    tanh = "tanh"
    exp = "exp"
    expm1 = "expm1"
    log = "log"
    log1p = "log1p"
    log2 = "log2"
    log10 = "log10"
    sqrt = "sqrt"
    rsqrt = "inv_sqrt"
    square = "square"
    abs = "abs"
    reciprocal = "inv"
    sin = "sin"
    cos = "cos"
    tan = "tan"
    asin = "asin"
    acos = "acos"
    atan = "atan"
    sinh = "sinh"
    cosh = "cosh"
    asinh = "asinh"
    acosh = "acosh"
    atanh = "atanh"
    floor = "floor"
    ceil = "ceil"
    trunc = "trunc"
    erf = "erf"
    erfc = "erfc"
    lgamma = "lgamma"
    digamma = "digamma"
    softplus = "log1p_exp"
    logsigmoid = "log_inv_logit"


ELEMENTWISE = named(_Elementwise, BUILTINS, str)


class _NotWritten:
    """Builtins Stan has (under these names) that the export does not write yet: a let of
    a matrix needs a declared `matrix[N, N]` the export has no size for."""

    gp_exp_quad_cov = (
        "Stan's gp_exp_quad_cov returns a matrix, which the export does not declare yet"
    )
    gp_matern32_cov = (
        "Stan's gp_matern32_cov returns a matrix, which the export does not declare yet"
    )
    gp_matern52_cov = (
        "Stan's gp_matern52_cov returns a matrix, which the export does not declare yet"
    )
    add_diag = "Stan's add_diag returns a matrix, which the export does not declare yet"
    cholesky = "Stan's cholesky_decompose returns a matrix, which the export does not declare yet"
    matvec = "a matrix times a vector (Stan's `*`): the export does not declare matrices yet"
    lag = "Stan writes a lag as a loop over time (`y[t - k]`), which the export does not write yet"
    lags = (
        "Stan writes lagged values as a loop over time and lags (`y[t - k]`), which the export "
        "does not write yet"
    )
    tail = "Stan's tail(x, n) of a series, which the export does not write yet"
    linear_recurrence = (
        "Stan writes a recurrence as a loop over time that fills a local array, which the "
        "export does not write yet"
    )
    ode_rk45 = (
        "Stan's ode_rk45 takes its right-hand side as a function of a `functions` block, "
        "which the export does not write yet"
    )
    ode_rk45_tol = ode_rk45
    ode_bdf = (
        "Stan's ode_bdf (CVODES's BDF) takes its right-hand side as a function of a "
        "`functions` block, which the export does not write yet"
    )
    ode_bdf_tol = ode_bdf


NOT_WRITTEN = named(_NotWritten, BUILTINS, str)
#: Stan functions the printer may be handed as `Call("stan:<name>", ...)` when a
#: family's argument is written through one (`multiply_lower_tri_self_transpose(L)`).
STAN_PREFIX = "stan:"


class _Reduce:
    """A whole value to one number."""

    sum = "sum"
    mean = "mean"
    prod = "prod"
    logsumexp = "log_sum_exp"


class _Extreme:
    """One argument: its smallest (largest) entry; two: the elementwise one of the two."""

    min = ("min", "fmin")
    max = ("max", "fmax")


class _Rowwise:
    """Along one vector."""

    softmax = "softmax"
    log_softmax = "log_softmax"
    cumsum = "cumulative_sum"
    sort = "sort_asc"


class _DividedBySum:
    """Along one vector, written as the vector over its sum."""

    normalize = True


class _Infix:
    """Written as Stan's power operator (`a ^ b`; `.^` elementwise)."""

    pow = True


REDUCE = named(_Reduce, BUILTINS, str)
EXTREME = named(_Extreme, BUILTINS, tuple)
ROWWISE = named(_Rowwise, BUILTINS, str)
DIVIDED_BY_SUM = members(_DividedBySum, BUILTINS)
INFIX = members(_Infix, BUILTINS)


def composed(fn: str, term: Call) -> Term | None:
    """The functions Stan writes as a composition of its own: the same term, rewritten."""
    x = term.args[0] if term.args else None
    build = _COMPOSED.get(fn)
    if x is None or len(term.args) != 1 or build is None:
        return None
    return build(x, term.span)


def _call(name: str, arg: Term, s: Span) -> Term:
    return Call(name, (arg,), s)


def _softsign(x: Term, s: Span) -> Term:
    return Op("/", x, Op("+", Num(1.0, s), _call("abs", x, s), s), s)


def _silu(x: Term, s: Span) -> Term:
    return Op("*", x, _call("sigmoid", x, s), s)


def _mish(x: Term, s: Span) -> Term:
    return Op("*", x, _call("tanh", _call("softplus", x, s), s), s)


def _gelu(x: Term, s: Span) -> Term:
    return Op("*", x, _call(STAN_PREFIX + "Phi", x, s), s)  # torch's exact form, x * Phi(x)


def _erfinv(x: Term, s: Span) -> Term:
    return _call(STAN_PREFIX + "inv_erfc", Op("-", Num(1.0, s), x, s), s)


def _relu(x: Term, s: Span) -> Term:
    return Call("max", (x, Num(0.0, s)), s)


class _Composition:
    """The functions Stan writes as a composition of its own, each `(x, span) -> term`,
    named after the registry's entry."""

    softsign = _softsign
    silu = _silu
    mish = _mish
    gelu = _gelu
    erfinv = _erfinv
    relu = _relu


_COMPOSED: dict[str, Callable[[Term, Span], Term]] = {
    name: build for name, build in named(_Composition, BUILTINS, FunctionType).items()
}


__all__ = [
    "DIVIDED_BY_SUM",
    "ELEMENTWISE",
    "EXTREME",
    "INFIX",
    "NOT_WRITTEN",
    "REDUCE",
    "ROWWISE",
    "STAN_PREFIX",
    "composed",
]
