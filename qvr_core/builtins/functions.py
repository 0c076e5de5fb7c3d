"""The builtin functions and operators of program `let` arithmetic, each described once.

The checker types a call from its entry's `shape` (what the result's plates and
event are), the runtime runs it from the torch implementation keyed by the same
name (`qvr_core.runtime.functions`), and the editor documents, completes and
colours it from here; `tests/builtins/test_agreement.py` checks that the runtime
implements exactly these names.

Shapes:
- `elementwise`: one result per entry; several arguments broadcast (plates united).
- `reduce`: the whole value to one number (`sum(theta)`), or along one axis when a
  method is given it (`theta.sum(0)`).
- `rowwise`: along the last axis, keeping the shape (`softmax(logits)`).
- `gram`: a square matrix of the points of a vector, one entry per pair of points
  (`gp_exp_quad_cov(x, alpha, rho)`, N points to N x N).
- `matrix`: a square matrix to another of its size (`cholesky(K)`, `add_diag(K, 1e-10)`).
- `matrix_vector`: a square matrix times a vector, the vector's shape (`matvec(L, z)`).
- `series`: along the last axis of a series (a plate over time), the shape kept, each
  entry reading those before it (`lag(y, 1)`, `linear_recurrence(s0, c, d)`); only in
  Bayesian programs, where the last axis is the series' own.
- `ode`: the solution of an ordinary differential equation whose right-hand side is a
  `define` the call names (`ode_rk45(f, z0, t0, ts, theta)`): one state per output time,
  a T x N value (the times' rows, then the state's plate); only in Bayesian programs.

The linear algebra of Gaussian processes (`gram`, `matrix`, `matrix_vector`) is qvr's own,
named as Stan names it (quivers has none; a call parses in every quivers grammar, as
`Flat`, qvr's own family, does, so neither gets the QVR012 hint). So are the series
functions, which say what a Stan model's loop over time says (`y[t - 1]`, a state
carried from one step to the next: GARCH's variance, an AR(1) process). The ODE solver is
too, named as Stan's `ode_rk45` (and the stiff `ode_bdf`): its first argument names a
`define`, a function of the program's text rather than a value, so its checker
(`check/ode_calls.py`) and runtime (`runtime/ode.py`) are its own.

`min`/`max` with one argument reduce (as quivers' tensor reductions do) and with
two compare elementwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Shape = Literal[
    "elementwise", "reduce", "rowwise", "gram", "matrix", "matrix_vector", "series", "ode"
]


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[str, ...]
    doc: str
    shape: Shape = "elementwise"
    method: bool = False  # also written as a method of a value: `theta.sum()`
    reduces_alone: bool = False  # one argument reduces (`max(x)`); two compare
    #: Parameters that take one number each, not a series (a recurrence's coefficient).
    numbers: tuple[str, ...] = ()
    #: Parameters written as a whole number (`lag`'s k): the runtime reads it as a count.
    whole: tuple[str, ...] = ()
    #: Parameters written as a declared finite object (`lags`' L): the value gets that
    #: plate, and the runtime reads the object's size as a count.
    objects: tuple[str, ...] = ()
    #: What the object does to the series' plates: `adds` it as a new last axis (`lags`),
    #: `replaces` the series' own last plate, no longer than it (`tail`).
    object_plate: Literal["adds", "replaces", ""] = ""
    #: Parameters written as the name of a `define` (`ode_rk45`'s f): a function, not a
    #: value; the call's term carries the define's body (`terms.Call.function`).
    defines: tuple[str, ...] = ()
    #: Parameters that must be data, or computed from data only (`ode_rk45`'s output
    #: times): the runtime reads them as Python numbers, fixed for the whole run.
    data: tuple[str, ...] = ()
    #: Of those, the increasing times a solver gives its value at (one row each); the
    #: others are one number each.
    times: tuple[str, ...] = ()

    @property
    def arity(self) -> int:
        return len(self.params)

    def accepts(self, count: int) -> bool:
        """Whether a call with `count` arguments is this function."""
        return count == self.arity or (self.reduces_alone and count == 1)

    @property
    def objects_at(self) -> frozenset[int]:
        """The positions of the parameters written as a finite object."""
        return frozenset(i for i, p in enumerate(self.params) if p in self.objects)

    @property
    def in_morphisms(self) -> bool:
        """Whether a morphism program's `let` may call it: its values carry a batch axis
        (and a position axis), so only functions of one entry or of the last axis keep
        their meaning there."""
        return self.shape in ("elementwise", "rowwise")  # not `series`: its axis is time


def _unary(name: str, what: str, method: bool = False) -> Function:
    return Function(name, ("x",), f"Elementwise {what} of a value.", method=method)


def _reduce(name: str, what: str, method: bool = True) -> Function:
    return Function(
        name,
        ("x",),
        f"The {what} of every entry of a value, one number (as a method, `x.{name}(axis)` "
        "reduces one axis).",
        shape="reduce",
        method=method,
    )


def _rowwise(name: str, what: str) -> Function:
    return Function(name, ("x",), f"{what}, along the last axis.", shape="rowwise")


def _extreme(name: str, what: str, entry: str) -> Function:
    return Function(
        name,
        ("a", "b"),
        f"Elementwise {what} of two values of one dimension (or a value and a number); "
        f"with one value, its {entry} entry.",
        reduces_alone=True,
    )


_FUNCTIONS = (
    _unary("sigmoid", "logistic sigmoid 1 / (1 + exp(-x))", method=True),
    _unary("tanh", "hyperbolic tangent", method=True),
    _unary("exp", "exponential", method=True),
    _unary("expm1", "exp(x) - 1, accurate near 0"),
    _unary("log", "natural logarithm", method=True),
    _unary("log1p", "log(1 + x), accurate near 0"),
    _unary("log2", "base-2 logarithm"),
    _unary("log10", "base-10 logarithm"),
    _unary("sqrt", "square root", method=True),
    _unary("rsqrt", "reciprocal square root 1 / sqrt(x)"),
    _unary("square", "square", method=True),
    _unary("abs", "absolute value", method=True),
    _unary("sign", "sign (-1, 0 or 1)"),
    _unary("reciprocal", "reciprocal 1 / x"),
    _unary("sin", "sine"),
    _unary("cos", "cosine"),
    _unary("tan", "tangent"),
    _unary("asin", "inverse sine"),
    _unary("acos", "inverse cosine"),
    _unary("atan", "inverse tangent"),
    _unary("sinh", "hyperbolic sine"),
    _unary("cosh", "hyperbolic cosine"),
    _unary("asinh", "inverse hyperbolic sine"),
    _unary("acosh", "inverse hyperbolic cosine"),
    _unary("atanh", "inverse hyperbolic tangent"),
    _unary("floor", "floor"),
    _unary("ceil", "ceiling"),
    _unary("round", "rounding to the nearest whole number"),
    _unary("trunc", "truncation toward zero"),
    _unary("erf", "error function"),
    _unary("erfc", "complementary error function"),
    _unary("erfinv", "inverse error function"),
    _unary("lgamma", "log of the absolute gamma function"),
    _unary("digamma", "digamma function (derivative of lgamma)"),
    _unary("relu", "rectifier max(x, 0)"),
    _unary("softplus", "softplus log(1 + exp(x))"),
    _unary("logsigmoid", "log of the logistic sigmoid"),
    _unary("softsign", "softsign x / (1 + |x|)"),
    _unary("gelu", "Gaussian error linear unit"),
    _unary("silu", "sigmoid linear unit x * sigmoid(x)"),
    _unary("elu", "exponential linear unit"),
    _unary("selu", "scaled exponential linear unit"),
    _unary("mish", "mish x * tanh(softplus(x))"),
    _unary("relu6", "rectifier clipped at 6"),
    _reduce("sum", "sum"),
    _reduce("mean", "mean"),
    _reduce("prod", "product"),
    _reduce("logsumexp", "log of the sum of the exponentials", method=False),
    _rowwise("softmax", "Softmax"),
    _rowwise("log_softmax", "Log-softmax"),
    _rowwise("cumsum", "Cumulative sum"),
    _rowwise("sort", "Sorted in increasing order"),
    _rowwise("normalize", "Divided by its sum"),
    _rowwise(
        "layer_norm",
        "Shifted to mean 0 and scaled to variance 1 (LayerNorm without gain or bias; "
        "param_source=layer_norm on a morphism learns them)",
    ),
    _extreme("min", "minimum", "smallest"),
    _extreme("max", "maximum", "largest"),
    Function("pow", ("a", "b"), "Elementwise power a ** b."),
    Function(
        "gp_exp_quad_cov",
        ("x", "alpha", "rho"),
        "The exponentiated quadratic covariance of the points x, an N x N matrix: "
        "alpha² exp(-(x_i - x_j)² / (2 rho²)) for each pair (Stan's gp_exp_quad_cov).",
        shape="gram",
    ),
    Function(
        "gp_matern32_cov",
        ("x", "alpha", "rho"),
        "The Matérn 3/2 covariance of the points x, an N x N matrix: alpha² (1 + √3 d / rho) "
        "exp(-√3 d / rho) with d = |x_i - x_j| (Stan's gp_matern32_cov): once-differentiable "
        "functions, rougher than the exponentiated quadratic's.",
        shape="gram",
    ),
    Function(
        "gp_matern52_cov",
        ("x", "alpha", "rho"),
        "The Matérn 5/2 covariance of the points x, an N x N matrix: alpha² (1 + √5 d / rho "
        "+ 5 d² / (3 rho²)) exp(-√5 d / rho) with d = |x_i - x_j| (Stan's gp_matern52_cov): "
        "twice-differentiable functions.",
        shape="gram",
    ),
    Function(
        "add_diag",
        ("m", "d"),
        "The square matrix m with d added to its diagonal (Stan's add_diag): a jitter that "
        "keeps a covariance positive definite.",
        shape="matrix",
    ),
    Function(
        "cholesky",
        ("m",),
        "The lower-triangular Cholesky factor L of a symmetric positive-definite matrix, "
        "L Lᵀ = m (Stan's cholesky_decompose); not a number where m is not positive definite, "
        "so a sampler rejects that point.",
        shape="matrix",
    ),
    Function(
        "matvec",
        ("m", "v"),
        "The product of a square matrix and a vector: (m v)_i = sum_j m[i, j] v[j] (Stan's "
        "matrix * vector), shaped as v.",
        shape="matrix_vector",
    ),
    Function(
        "lag",
        ("x", "k"),
        "x moved k places along its last axis: entry t is x[t - k], and the first k entries "
        "are 0 (Stan's y[t - k] in a loop over t from k + 1); k a whole number.",
        shape="series",
        whole=("k",),
    ),
    Function(
        "lags",
        ("x", "L"),
        "The K values before each entry of x along its last axis, as a new last axis over "
        "the plate L (K its size): entry [t, k] is x[t - k - 1], 0 before the series starts "
        "(Stan's y[t - k] in a loop over k from 1 to K); L a declared finite object.",
        shape="series",
        objects=("L",),
        object_plate="adds",
    ),
    Function(
        "tail",
        ("x", "P"),
        "The last n entries of x along its last axis, over the plate P (n its size; Stan's "
        "tail(x, n)): a series less the first values a model only conditions on (an AR(K) "
        "model scores y from step K + 1); P a declared finite object.",
        shape="series",
        objects=("P",),
        object_plate="replaces",
    ),
    Function(
        "linear_recurrence",
        ("init", "coef", "drive"),
        "The series s along drive's last axis with s[0] = init and s[t] = coef * s[t - 1] + "
        "drive[t] after it (drive[0] is not read): a state carried from one step to the next, "
        "as GARCH's variance or an AR(1) process; init and coef are numbers. Computed in "
        "log2(T) vectorised steps, so a gradient costs O(T log T), not a loop of T steps.",
        shape="series",
        numbers=("init", "coef"),
    ),
    Function(
        "ode_rk45",
        ("f", "z0", "t0", "ts", "theta"),
        "The solution of the ODE dz/dt = f(t, z, theta) from z(t0) = z0 at the output times "
        "ts, one state per time: a T x N value (Stan's ode_rk45, with its tolerances 1e-6 "
        "and at most 10^6 steps between two times). f names a `define f(t : Real, z : State "
        "-> Real, theta : Param -> Real) : State -> Real !{} =`; t0 and ts are data (ts "
        "increasing, after t0). Adaptive Dormand-Prince 5(4) steps, as Stan's rk45, the "
        "gradient's sensitivities held to the same tolerances.",
        shape="ode",
        defines=("f",),
        data=("t0", "ts"),
        times=("ts",),
    ),
    Function(
        "ode_rk45_tol",
        ("f", "z0", "t0", "ts", "rtol", "atol", "max_num_steps", "theta"),
        "ode_rk45 with its tolerances given: each step's error estimate is within atol + "
        "rtol |z|, and at most max_num_steps steps are taken between two output times (a "
        "point that needs more is not a number, which a sampler rejects), as Stan's "
        "ode_rk45_tol and integrate_ode_rk45 take them; all three are data.",
        shape="ode",
        defines=("f",),
        data=("t0", "ts", "rtol", "atol", "max_num_steps"),
        times=("ts",),
    ),
    Function(
        "ode_bdf",
        ("f", "z0", "t0", "ts", "theta"),
        "The solution of a stiff ODE dz/dt = f(t, z, theta) from z(t0) = z0 at the output "
        "times ts, one state per time: a T x N value, as ode_rk45's (Stan's ode_bdf, with its "
        "tolerances 1e-10 and at most 10^8 steps between two times). For an ODE whose fast "
        "decay would hold an explicit method to tiny steps (chemical kinetics, "
        "pharmacokinetics): adaptive L-stable Rosenbrock steps (ROS34PW2, of order 3), each "
        "solving a linear system of f's Jacobian, the gradient's sensitivities held to the "
        "same tolerances. f names a `define` as ode_rk45's; t0 and ts are data.",
        shape="ode",
        defines=("f",),
        data=("t0", "ts"),
        times=("ts",),
    ),
    Function(
        "ode_bdf_tol",
        ("f", "z0", "t0", "ts", "rtol", "atol", "max_num_steps", "theta"),
        "ode_bdf with its tolerances given: each step's error estimate is within atol + "
        "rtol |z|, and at most max_num_steps steps are taken between two output times (a "
        "point that needs more is not a number, which a sampler rejects), as Stan's "
        "ode_bdf_tol and integrate_ode_bdf take them; all three are data.",
        shape="ode",
        defines=("f",),
        data=("t0", "ts", "rtol", "atol", "max_num_steps"),
        times=("ts",),
    ),
)

FUNCTIONS: dict[str, Function] = {f.name: f for f in _FUNCTIONS}


@dataclass(frozen=True)
class Lifted:
    """A function of quivers' `let` that takes a lambda (`x -> body`) as an argument:
    typed and run by `check/comprehensions.py`, not by a table of implementations."""

    name: str
    params: tuple[str, ...]
    doc: str


#: quivers' `map(xs, x -> body)`: the body once per entry of `xs`'s leading plate.
MAP = Lifted(
    "map",
    ("xs", "f"),
    "The value whose entry i is f's body with its parameter bound to entry i of xs, "
    "along xs's first plate (quivers' map over a tensor's leading axis): `map(xs, x -> "
    "x - 1.0)`. xs is a name; f is a lambda, written in the call or bound by a `let` "
    "(`let f = x -> x - 1.0`, then `map(xs, f)`).",
)

#: quivers' `fold(xs, init, acc -> x -> body)`: a left fold along `xs`'s leading plate.
FOLD = Lifted(
    "fold",
    ("xs", "init", "f"),
    "A left fold along xs's first plate: the accumulator starts as init, and each entry "
    "of xs in turn gives the next one as f's body, with f's first parameter the "
    "accumulator and its second the entry; the value is the last accumulator, of init's "
    "type (quivers' fold, curried with the accumulator first): `fold(xs, 0.0, acc -> x "
    "-> phi * acc + x)`. xs is a name; f is a lambda, written in the call or bound by a "
    "`let`.",
)

#: The functions that take a lambda, by name: the editor lists them with `FUNCTIONS`.
LIFTED: dict[str, Lifted] = {f.name: f for f in (MAP, FOLD)}

#: The shapes of linear algebra: their functions take and give matrices, not elementwise.
LINEAR_ALGEBRA: frozenset[Shape] = frozenset({"gram", "matrix", "matrix_vector"})
#: The functions a value's method may call (`theta.sum()`, `x.exp()`).
METHODS: dict[str, Function] = {f.name: f for f in _FUNCTIONS if f.method}

OperatorKind = Literal["arithmetic", "comparison", "logical"]


@dataclass(frozen=True)
class Operator:
    symbol: str
    kind: OperatorKind
    doc: str


_OPERATORS = (
    Operator("+", "arithmetic", "Sum, elementwise."),
    Operator("-", "arithmetic", "Difference, elementwise."),
    Operator("*", "arithmetic", "Product, elementwise."),
    Operator("/", "arithmetic", "Quotient, elementwise."),
    Operator("%", "arithmetic", "Remainder (the sign of the divisor), elementwise."),
    Operator("==", "comparison", "1 where equal, else 0."),
    Operator("!=", "comparison", "1 where different, else 0."),
    Operator("<", "comparison", "1 where less, else 0."),
    Operator("<=", "comparison", "1 where less or equal, else 0."),
    Operator(">", "comparison", "1 where greater, else 0."),
    Operator(">=", "comparison", "1 where greater or equal, else 0."),
    Operator("&&", "logical", "1 where both are non-zero, else 0."),
    Operator("||", "logical", "1 where either is non-zero, else 0."),
)

OPERATORS: dict[str, Operator] = {o.symbol: o for o in _OPERATORS}
#: The operators a morphism program's `let` may use (its checker types these four).
MORPHISM_OPERATORS = frozenset(o.symbol for o in _OPERATORS if o.kind == "arithmetic") - {"%"}
