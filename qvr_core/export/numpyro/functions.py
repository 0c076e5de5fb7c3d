"""How jax.numpy spells each builtin function a term may call, for the NumPyro export.

Each builtin of `qvr_core.builtins.functions` is written as the jnp / jax.nn call
with the same meaning as qvr's runtime gives it on torch tensors (the same axis,
the same constants: `gelu` exact, `layer_norm` with epsilon 1e-5). The tables are
namespace classes named after the registry's entries (`qvr_core.export.named`),
so a builtin the registry lacks fails at import and none is a string literal here.
"""

from __future__ import annotations

from qvr_core.builtins import FUNCTIONS
from qvr_core.export.named import members, named


class _Elementwise:
    """jnp / jax.nn spelling of each elementwise builtin, named after its registry entry."""

    sigmoid = "jax.nn.sigmoid"
    tanh = "jnp.tanh"
    exp = "jnp.exp"
    expm1 = "jnp.expm1"
    log = "jnp.log"
    log1p = "jnp.log1p"
    log2 = "jnp.log2"
    log10 = "jnp.log10"
    sqrt = "jnp.sqrt"
    square = "jnp.square"
    abs = "jnp.abs"
    sign = "jnp.sign"
    reciprocal = "jnp.reciprocal"
    sin = "jnp.sin"
    cos = "jnp.cos"
    tan = "jnp.tan"
    asin = "jnp.arcsin"
    acos = "jnp.arccos"
    atan = "jnp.arctan"
    sinh = "jnp.sinh"
    cosh = "jnp.cosh"
    asinh = "jnp.arcsinh"
    acosh = "jnp.arccosh"
    atanh = "jnp.arctanh"
    floor = "jnp.floor"
    ceil = "jnp.ceil"
    round = "jnp.round"  # half to even, as torch.round
    trunc = "jnp.trunc"
    erf = "jax.scipy.special.erf"
    erfc = "jax.scipy.special.erfc"
    erfinv = "jax.scipy.special.erfinv"
    lgamma = "jax.scipy.special.gammaln"
    digamma = "jax.scipy.special.digamma"
    relu = "jax.nn.relu"
    softplus = "jax.nn.softplus"
    logsigmoid = "jax.nn.log_sigmoid"
    softsign = "jax.nn.soft_sign"
    silu = "jax.nn.silu"
    elu = "jax.nn.elu"
    selu = "jax.nn.selu"
    relu6 = "jax.nn.relu6"


ELEMENTWISE = named(_Elementwise, FUNCTIONS, str)


#: The covariance functions' pairwise gaps of the points `{0}`, and the Matérn terms
#: r = sqrt(nu) |x_i - x_j| / rho of `{2}` (nu 3 and 5: Stan's 3/2 and 5/2 kernels)
_GAPS = "(jnp.asarray({0})[..., :, None] - jnp.asarray({0})[..., None, :])"
_R3 = "(3.0 ** 0.5 * jnp.abs(" + _GAPS + ") / ({2}))"
_R5 = "(5.0 ** 0.5 * jnp.abs(" + _GAPS + ") / ({2}))"


class _Written:
    """Builtins written by a template of their argument(s) `{0}`, `{1}`: where jnp has no
    one call of the same meaning (torch's `gelu` is the exact one; `rsqrt` of an integer is
    real)."""

    rsqrt = "1.0 / jnp.sqrt({0})"
    gelu = "jax.nn.gelu({0}, approximate=False)"
    mish = "jax.nn.mish({0})"
    softmax = "jax.nn.softmax({0}, axis=-1)"
    log_softmax = "jax.nn.log_softmax({0}, axis=-1)"
    cumsum = "jnp.cumsum({0}, axis=-1)"
    sort = "jnp.sort({0}, axis=-1)"
    normalize = "{0} / jnp.sum({0}, axis=-1, keepdims=True)"
    layer_norm = "jax.nn.standardize({0}, axis=-1, epsilon=1e-5)"
    pow = "jnp.power({0}, {1})"
    # a Gaussian process's linear algebra (a covariance, its jitter and Cholesky factor)
    gp_exp_quad_cov = "({1}) ** 2 * jnp.exp(-0.5 * (" + _GAPS + " / ({2})) ** 2)"
    gp_matern32_cov = "({1}) ** 2 * (1.0 + " + _R3 + ") * jnp.exp(-" + _R3 + ")"
    gp_matern52_cov = (
        "({1}) ** 2 * (1.0 + " + _R5 + " + " + _R5 + " ** 2 / 3.0) * jnp.exp(-" + _R5 + ")"
    )
    add_diag = "({0}) + ({1}) * jnp.eye(jnp.shape({0})[-1])"
    cholesky = "jnp.linalg.cholesky({0})"
    matvec = "jnp.matmul({0}, {1})"
    # a series along its last axis: the first k entries of a lag are 0; a linear recurrence
    # is the associative scan of its steps s -> a s + b, (0, init) first, as qvr's runtime
    # computes it
    lag = (
        "jnp.concatenate([jnp.zeros_like(jnp.asarray({0}, float)[..., : int({1})]), "
        "jnp.asarray({0}, float)[..., : jnp.shape({0})[-1] - int({1})]], axis=-1)"
    )
    lags = (
        "jnp.stack([jnp.concatenate([jnp.zeros_like(jnp.asarray({0}, float)[..., : k + 1]), "
        "jnp.asarray({0}, float)[..., : jnp.shape({0})[-1] - k - 1]], axis=-1) "
        "for k in range(int({1}))], axis=-1)"
    )
    tail = "jnp.asarray({0}, float)[..., jnp.shape({0})[-1] - int({1}) :]"
    linear_recurrence = (
        "jax.lax.associative_scan(lambda p, q: (q[0] * p[0], q[0] * p[1] + q[1]), "
        "(jnp.concatenate([jnp.zeros(jnp.shape({2})[:-1] + (1,)), "
        "jnp.broadcast_to(jnp.asarray({1}, float)[..., None], jnp.shape({2}))[..., 1:]], axis=-1), "
        "jnp.concatenate([jnp.broadcast_to(jnp.asarray({0}, float)[..., None], "
        "jnp.shape({2})[:-1] + (1,)), jnp.asarray({2}, float)[..., 1:]], axis=-1)), axis=-1)[1]"
    )


WRITTEN = named(_Written, FUNCTIONS, str)


class _Reduce:
    """Reductions: the whole value to one number, or along `axis` when a method gives one."""

    sum = "jnp.sum"
    mean = "jnp.mean"
    prod = "jnp.prod"
    logsumexp = "jax.nn.logsumexp"
    min = "jnp.min"
    max = "jnp.max"


REDUCE = named(_Reduce, FUNCTIONS, str)


class _NotWritten:
    """Builtins the export does not write yet, and why (said at the call)."""

    ode_rk45 = (
        "jax.experimental.ode.odeint solves an ODE, but its right-hand side is a JAX function, "
        "which the export does not write from a define yet"
    )
    ode_rk45_tol = ode_rk45
    ode_bdf = (
        "JAX has no stiff solver (jax.experimental.ode.odeint is explicit Dormand-Prince; "
        "a stiff one, as diffrax's Kvaerno5, is another library), and the export does not "
        "write a define as a JAX function yet"
    )
    ode_bdf_tol = ode_bdf


NOT_WRITTEN = named(_NotWritten, FUNCTIONS, str)


class _Pairwise:
    """`min`/`max` of two values, elementwise."""

    min = "jnp.minimum"
    max = "jnp.maximum"


PAIRWISE = named(_Pairwise, FUNCTIONS, str)


class _RealArguments:
    """Builtins whose arguments are written as reals: an integer base to a negative power
    is real in qvr, and an error in jnp."""

    pow = True


REAL_ARGUMENTS = members(_RealArguments, FUNCTIONS)


def known_function(name: str, arity: int, axis: int | None) -> bool:
    """Whether the printer writes builtin `name` called with `arity` arguments."""
    if name in PAIRWISE and arity == 2:
        return True
    if name in REDUCE:
        return arity == 1
    if axis is not None:
        return False
    if name in ELEMENTWISE:
        return arity == 1
    if name in WRITTEN:
        return arity == FUNCTIONS[name].arity if name in FUNCTIONS else False
    return False


__all__ = [
    "ELEMENTWISE",
    "NOT_WRITTEN",
    "PAIRWISE",
    "REAL_ARGUMENTS",
    "REDUCE",
    "WRITTEN",
    "known_function",
]
