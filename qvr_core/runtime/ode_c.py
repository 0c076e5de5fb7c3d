"""An ODE's right-hand side and its solvers, Stan's rk45 and the stiff one of `ode_bdf`
(ROS34PW2, `runtime.ode_rosenbrock`), written in C and compiled once.

Why C. NUTS evaluates the gradient of an ODE model's log density some 10^5 times. Written
with torch operations, one Dormand-Prince step of a two-state system and its gradient is
some 300 operations on tensors of a few numbers, each costing its dispatch (0.6 us
recorded, 10 us eager), not its arithmetic: 14 ms per evaluation of four chains for the
80 steps of posteriordb's Lotka-Volterra model, against Stan's 45 us per gradient. A
compiled loop does the same arithmetic in microseconds. So a define whose body uses only
what C writes directly (arithmetic, the elementwise functions of `_FUNCTIONS`) is
written here as a C function, with its derivatives carried forward (forward-mode
differentiation: each value with its tangents along every parameter and initial state,
the product rule and each function's derivative written out), and solved by adaptive
Dormand-Prince 5(4) steps as Stan's `ode_rk45` is: each step kept when its error
estimate is within atol + rtol |z|, each chain with its own steps, each output time
stepped to exactly, at most `max_num_steps` steps kept between two times (more: NaN,
which a sampler rejects, as Stan rejects the point). The tangents ride along the same steps, so
the gradient is the exact derivative of the steps taken (their sizes held fixed: the
solution's, to the tolerance).

The source is compiled by the C compiler (`cc`, or `$CC`) into the user's cache folder,
named by a hash of the source, so each model is compiled once (some 0.1 s); where there
is no compiler, or the body uses what `_FUNCTIONS` lacks, `compiled` gives None and the
caller keeps the torch solver (`runtime.ode`).

The stiff solver (`qvr_ode_solve_stiff`) reads df/dz from the same tangents (unit tangents
along z), factors W = I - h gamma J once a step and carries the state's tangents through
the stages with that W (the W-method's derivative: `runtime.ode_rosenbrock` says why that
is an order-3 gradient), held to the tolerance as the state is.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from qvr_core.builtins import FUNCTIONS
from qvr_core.check.terms import Body, Call, Gather, Num, Op, Ref, Stack, Term, Unary, refs
from qvr_core.export.named import members, named
from qvr_core.runtime import ode_rosenbrock as ros


class _Elementwise:
    """The C of each elementwise builtin of one argument, named after the registry's entry
    (`named`): its value and its derivative, of the argument `{x}` (a C expression) and the
    value `{y}` already computed."""

    exp = ("exp({x})", "{y}")
    log = ("log({x})", "1.0 / ({x})")
    sqrt = ("sqrt({x})", "0.5 / {y}")
    rsqrt = ("1.0 / sqrt({x})", "-0.5 * {y} / ({x})")
    square = ("({x}) * ({x})", "2.0 * ({x})")
    reciprocal = ("1.0 / ({x})", "-{y} * {y}")
    sin = ("sin({x})", "cos({x})")
    cos = ("cos({x})", "-sin({x})")
    tan = ("tan({x})", "1.0 + {y} * {y}")
    tanh = ("tanh({x})", "1.0 - {y} * {y}")
    sinh = ("sinh({x})", "cosh({x})")
    cosh = ("cosh({x})", "sinh({x})")
    asin = ("asin({x})", "1.0 / sqrt(1.0 - ({x}) * ({x}))")
    acos = ("acos({x})", "-1.0 / sqrt(1.0 - ({x}) * ({x}))")
    atan = ("atan({x})", "1.0 / (1.0 + ({x}) * ({x}))")
    expm1 = ("expm1({x})", "{y} + 1.0")
    log1p = ("log1p({x})", "1.0 / (1.0 + ({x}))")
    log2 = ("log2({x})", "1.0 / (({x}) * 0.69314718055994530942)")
    log10 = ("log10({x})", "1.0 / (({x}) * 2.30258509299404568402)")
    sigmoid = ("1.0 / (1.0 + exp(-({x})))", "{y} * (1.0 - {y})")
    softplus = ("log1p(exp({x}))", "1.0 / (1.0 + exp(-({x})))")
    logsigmoid = ("-log1p(exp(-({x})))", "1.0 / (1.0 + exp({x}))")
    abs = ("fabs({x})", "(({x}) > 0.0) - (({x}) < 0.0)")
    erf = ("erf({x})", "1.12837916709551257390 * exp(-({x}) * ({x}))")
    erfc = ("erfc({x})", "-1.12837916709551257390 * exp(-({x}) * ({x}))")


class _Power:
    """The builtin of two arguments written with C's `pow`."""

    pow = True


_FUNCTIONS: dict[str, tuple[str, str]] = named(_Elementwise, FUNCTIONS, tuple)
_POWER = frozenset(members(_Power, FUNCTIONS))
#: Operators C writes as they are, with the derivative of `a op b` of the values a, b
#: and the tangents da, db (None where the operand has none).
_ARITHMETIC = frozenset({"+", "-", "*", "/"})


class NotWritten(Exception):
    """What the C writer does not write (the torch solver runs instead)."""


@dataclass(frozen=True)
class _Dual:
    """A value of the body in C: the expression of its value, and the C array of its
    tangents (None: constant along every parameter)."""

    value: str
    tangent: str | None


_Value = _Dual | list[_Dual]


class _Writer:
    """Writes the body's right-hand side as straight-line C, entry by entry (a vector is
    the list of its entries, as `runtime.ode_rhs` evaluates it)."""

    def __init__(self, body: Body) -> None:
        self.body = body
        self.n = max(body.sizes[1], 1)
        self.m = max(body.sizes[2], 1)
        self.p = self.m + self.n  # tangents: along each entry of theta, then of z0
        self.lines: list[str] = []
        self.count = 0

    def fresh(self, value: str, tangent: Callable[[str], str] | None) -> _Dual:
        """A new C variable of `value`, its tangents `tangent(k)` (k the C index)."""
        self.count += 1
        name = f"v{self.count}"
        self.lines.append(f"double {name} = {value};")
        if tangent is None:
            return _Dual(name, None)
        self.lines.append(f"double d{name}[P];")
        self.lines.append(f"for (int k = 0; k < P; k++) d{name}[k] = {tangent('k')};")
        return _Dual(name, f"d{name}")

    def source(self) -> str:
        t_name, z_name, theta_name = self.body.params
        env: dict[str, _Value] = {t_name: _Dual("t", None)}
        z = [_Dual(f"z[{i}]", f"(S + {i} * P)") for i in range(self.n)]
        env[z_name] = z if self.body.sizes[1] else z[0]
        theta = [_Dual(f"th[{j}]", f"(E + {j} * P)") for j in range(self.m)]
        env[theta_name] = theta if self.body.sizes[2] else theta[0]
        for name, term in self.body.lines:
            env[name] = self.value(term, env)
        out = self.value(self.body.result, env)
        entries = out if isinstance(out, list) else [out]
        if len(entries) != self.n:
            raise NotWritten("a result of another length than the state")
        for i, e in enumerate(entries):
            self.lines.append(f"f[{i}] = {e.value};")
            d = f"{e.tangent}[k]" if e.tangent is not None else "0.0"
            self.lines.append(f"for (int k = 0; k < P; k++) dF[{i} * P + k] = {d};")
        return "\n    ".join(self.lines)

    def value(self, term: Term, env: dict[str, _Value]) -> _Value:
        match term:
            case Num(value=value):
                return _Dual(repr(float(value)), None)
            case Ref(name=name):
                return env[name]
            case Gather(base=base, indices=(Num(value=index),)):
                entries = env[base]
                if not isinstance(entries, list):
                    raise NotWritten("an entry of a number")
                return entries[int(index)]
            case Unary(op="-", operand=operand):
                return self._each([self.value(operand, env)], lambda a: self._neg(a[0]))
            case Op(op=op, left=left, right=right) if op in _ARITHMETIC:
                parts = [self.value(left, env), self.value(right, env)]
                return self._each(parts, lambda a: self._arithmetic(op, a[0], a[1]))
            case Call(fn=fn, args=(arg,), axis=None) if fn in _FUNCTIONS:
                return self._each([self.value(arg, env)], lambda a: self._function(fn, a[0]))
            case Call(fn=fn, args=(base, exponent), axis=None) if fn in _POWER:
                parts = [self.value(base, env), self.value(exponent, env)]
                return self._each(parts, lambda a: self._power(a[0], a[1]))
            case Stack(items=items):
                out: list[_Dual] = []
                for item in items:
                    v = self.value(item, env)
                    if isinstance(v, list):
                        raise NotWritten("a list of vectors")
                    out.append(v)
                return out
            case _:
                pass
        raise NotWritten(f"{type(term).__name__.lower()} {getattr(term, 'fn', '')}".strip())

    def _each(self, args: list[_Value], fn: Callable[[list[_Dual]], _Dual]) -> _Value:
        """`fn` entry by entry over the arguments that are vectors (numbers broadcast)."""
        lists = [a for a in args if isinstance(a, list)]
        if not lists:
            return fn([a for a in args if isinstance(a, _Dual)])
        rows = [a if isinstance(a, list) else [a] * len(lists[0]) for a in args]
        return [fn(list(entry)) for entry in zip(*rows, strict=True)]

    def _neg(self, a: _Dual) -> _Dual:
        t = a.tangent
        return self.fresh(f"-({a.value})", None if t is None else lambda k: f"-{t}[{k}]")

    def _arithmetic(self, op: str, a: _Dual, b: _Dual) -> _Dual:
        value = f"({a.value}) {op} ({b.value})"
        da, db = a.tangent, b.tangent
        if da is None and db is None:
            return self.fresh(value, None)
        left = f"{da}[{{k}}]" if da else "0.0"
        right = f"{db}[{{k}}]" if db else "0.0"
        rule = {
            "+": f"{left} + {right}",
            "-": f"{left} - {right}",
            "*": f"{left} * ({b.value}) + ({a.value}) * {right}",
            "/": f"({left} - ({a.value}) / ({b.value}) * {right}) / ({b.value})",
        }[op]
        return self.fresh(value, lambda k: rule.format(k=k))

    def _function(self, fn: str, a: _Dual) -> _Dual:
        value, slope = _FUNCTIONS[fn]
        y = self.fresh(value.format(x=a.value), None)
        if a.tangent is None:
            return y
        d = slope.format(x=a.value, y=y.value)
        t = a.tangent
        return self.fresh(y.value, lambda k: f"({d}) * {t}[{k}]")

    def _power(self, a: _Dual, b: _Dual) -> _Dual:
        y = self.fresh(f"pow({a.value}, {b.value})", None)
        if a.tangent is None and b.tangent is None:
            return y
        da = f"({b.value}) * pow({a.value}, ({b.value}) - 1.0) * {a.tangent}[{{k}}]"
        db = f"{y.value} * log({a.value}) * {b.tangent}[{{k}}]"
        parts = [p for p, t in ((da, a.tangent), (db, b.tangent)) if t is not None]
        return self.fresh(y.value, lambda k: " + ".join(p.format(k=k) for p in parts))


# `ode_bdf`'s solver: adaptive ROS34PW2 steps (runtime/ode_rosenbrock.py says why this
# method), its tableau written from that module's numbers, on the state and its tangents
# with one matrix W = I - h gamma J for both: the W-method's derivative, so no second
# derivative of the body is needed. J is read from the body's own tangents (unit tangents
# along z give df/dz), df/dt by a forward difference where the body reads t.
_STIFF = r"""
static const double RA[4][4] = %(alpha)s;
static const double RG[4][4] = %(coupling)s;
static const double RB[4] = %(b)s;
static const double RE[4] = %(error)s;
static const double RC[4] = %(nodes)s;
static const double RD[4] = %(time_weights)s;
#define GAMMA %(gamma)s
#define EXPONENT %(exponent)s
#define TIME_STEP %(time_step)s

/* a = its LU factors with partial pivoting, in place (N x N, by rows); 1 when singular. */
static int factor(double *a, int *piv) {
    for (int c = 0; c < N; c++) {
        int p = c;
        double best = fabs(a[c * N + c]);
        for (int r = c + 1; r < N; r++)
            if (fabs(a[r * N + c]) > best) { best = fabs(a[r * N + c]); p = r; }
        if (!(best > 0.0) || !isfinite(best)) return 1;
        piv[c] = p;
        if (p != c)
            for (int q = 0; q < N; q++) {
                double s = a[c * N + q]; a[c * N + q] = a[p * N + q]; a[p * N + q] = s;
            }
        for (int r = c + 1; r < N; r++) {
            double l = a[r * N + c] / a[c * N + c];
            a[r * N + c] = l;
            for (int q = c + 1; q < N; q++) a[r * N + q] -= l * a[c * N + q];
        }
    }
    return 0;
}

/* b (N values, `stride` apart) solved in place by the factors of `factor`. */
static void solve(const double *a, const int *piv, double *b, int stride) {
    for (int c = 0; c < N; c++)
        if (piv[c] != c) {
            double s = b[c * stride]; b[c * stride] = b[piv[c] * stride]; b[piv[c] * stride] = s;
        }
    for (int r = 0; r < N; r++)
        for (int q = 0; q < r; q++) b[r * stride] -= a[r * N + q] * b[q * stride];
    for (int r = N - 1; r >= 0; r--) {
        for (int q = r + 1; q < N; q++) b[r * stride] -= a[r * N + q] * b[q * stride];
        b[r * stride] /= a[r * N + r];
    }
}

/* The first step (Hairer and Wanner's rule): a hundredth of the state over its derivative,
   each over its tolerance; 1e-6 of the first interval where either is negligible. */
static double first_step(double t, const double *y, const double *th, double span,
                         double rtol, double atol) {
    double f[N], dF[N * P], S[N * P];
    memset(S, 0, sizeof S);
    rhs(t, y, S, th, f, dF);
    double d0 = 0.0, d1 = 0.0;
    for (int i = 0; i < N; i++) {
        double scale = atol + rtol * fabs(y[i]);
        d0 = fmax(d0, fabs(y[i]) / scale);
        d1 = fmax(d1, fabs(f[i]) / scale);
    }
    double h = (d0 > 1e-5 && d1 > 1e-5) ? 0.01 * d0 / d1 : 1e-6 * span;
    return isfinite(h) ? fmin(h, span) : 1e-6 * span;
}

/* One chain by ROS34PW2: 0 when solved, 1 when an interval needs more than max_steps steps
   kept, or a step shrinks to nothing (a singular W or a blow-up is rejected until it does). */
static int stiff_chain(const double *z0, const double *th, double t0, int T, const double *ts,
                       double rtol, double atol, long max_steps, double h0, double *out,
                       double *sens) {
    double y[N], S[N * P], U[N * P], J[N * N], W[N * N];
    double f0[N], df0[N * P], ft[N], dft[N * P], fs[N], dfs[N * P];
    double x[N], dx[N * P], k[4][N], dk[4][N * P], g[N], dg[N * P];
    int piv[N];
    memcpy(y, z0, sizeof y);
    memset(S, 0, sizeof S);
    memset(U, 0, sizeof U);
    for (int i = 0; i < N; i++) S[i * P + M + i] = U[i * P + M + i] = 1.0;
    memset(ft, 0, sizeof ft);
    memset(dft, 0, sizeof dft);
    double t = t0;
    double h = h0 > 0.0 ? h0 : first_step(t, y, th, ts[0] - t0, rtol, atol);
    for (int j = 0; j < T; j++) {
        double end = ts[j];
        double tiny = 1e-12 * (fabs(end) > 1.0 ? fabs(end) : 1.0);
        long taken = 0;
        while (t < end) {
            if (taken >= max_steps || h < tiny || !isfinite(h)) return 1;
            int last = end - (t + h) <= tiny;
            double size = last ? end - t : h;
            /* J from unit tangents along z (the columns after theta's), then f and its
               tangents at the step's start, then df/dt */
            rhs(t, y, U, th, f0, dfs);
            for (int i = 0; i < N; i++)
                for (int l = 0; l < N; l++) J[i * N + l] = dfs[i * P + M + l];
            rhs(t, y, S, th, f0, df0);
            if (READS_TIME) {
                double dt = TIME_STEP * fmax(1.0, fabs(t));
                rhs(t + dt, y, S, th, ft, dft);
                for (int i = 0; i < N; i++) ft[i] = (ft[i] - f0[i]) / dt;
                for (int q = 0; q < N * P; q++) dft[q] = (dft[q] - df0[q]) / dt;
            }
            for (int q = 0; q < N * N; q++) W[q] = -size * GAMMA * J[q];
            for (int i = 0; i < N; i++) W[i * N + i] += 1.0;
            double ratio = 0.0;
            if (factor(W, piv)) ratio = NAN;
            for (int s = 0; s < 4 && !isnan(ratio); s++) {
                memcpy(x, y, sizeof x);
                memcpy(dx, S, sizeof dx);
                memset(g, 0, sizeof g);
                memset(dg, 0, sizeof dg);
                for (int r = 0; r < s; r++) {
                    for (int i = 0; i < N; i++) {
                        x[i] += RA[s][r] * k[r][i];
                        g[i] += RG[s][r] * k[r][i];
                    }
                    for (int q = 0; q < N * P; q++) {
                        dx[q] += RA[s][r] * dk[r][q];
                        dg[q] += RG[s][r] * dk[r][q];
                    }
                }
                if (s == 0) {
                    memcpy(fs, f0, sizeof fs);
                    memcpy(dfs, df0, sizeof dfs);
                } else {
                    rhs(t + RC[s] * size, x, dx, th, fs, dfs);
                }
                double w = size * size * RD[s];
                for (int i = 0; i < N; i++) {
                    double jg = 0.0;
                    for (int l = 0; l < N; l++) jg += J[i * N + l] * g[l];
                    k[s][i] = size * (fs[i] + jg) + w * ft[i];
                    for (int c = 0; c < P; c++) {
                        double jdg = 0.0;
                        for (int l = 0; l < N; l++) jdg += J[i * N + l] * dg[l * P + c];
                        dk[s][i * P + c] = size * (dfs[i * P + c] + jdg) + w * dft[i * P + c];
                    }
                }
                solve(W, piv, k[s], 1);
                for (int c = 0; c < P; c++) solve(W, piv, dk[s] + c, P);
            }
            if (!isnan(ratio)) {
                memcpy(x, y, sizeof x);
                memcpy(dx, S, sizeof dx);
                for (int r = 0; r < 4; r++) {
                    for (int i = 0; i < N; i++) x[i] += RB[r] * k[r][i];
                    for (int q = 0; q < N * P; q++) dx[q] += RB[r] * dk[r][q];
                }
                for (int i = 0; i < N; i++) {
                    double e = 0.0;
                    for (int r = 0; r < 4; r++) e += RE[r] * k[r][i];
                    double q = fabs(e) / (atol + rtol * fmax(fabs(y[i]), fabs(x[i])));
                    if (isnan(q) || isnan(ratio)) ratio = NAN;
                    else if (q > ratio) ratio = q;
                }
                /* the tangents held to the same test, as Stan's CVODES holds them */
                for (int q = 0; q < N * P; q++) {
                    double e = 0.0;
                    for (int r = 0; r < 4; r++) e += RE[r] * dk[r][q];
                    double u = fabs(e) / (atol + rtol * fmax(fabs(S[q]), fabs(dx[q])));
                    if (isnan(u) || isnan(ratio)) ratio = NAN;
                    else if (u > ratio) ratio = u;
                }
            }
            double grow = !isfinite(ratio) ? 0.2 : ratio == 0.0 ? 5.0 : 0.9 * pow(ratio, -EXPONENT);
            double proposal = size * fmin(5.0, fmax(0.2, grow));
            if (ratio <= 1.0) {
                taken++;
                STEPS[0]++;
                t = last ? end : t + size;
                memcpy(y, x, sizeof y);
                memcpy(S, dx, sizeof S);
                h = last ? fmax(h, proposal) : proposal;
            } else {
                STEPS[1]++;
                h = proposal;
            }
        }
        memcpy(out + (long)j * N, y, sizeof y);
        memcpy(sens + (long)j * N * P, S, sizeof S);
    }
    return 0;
}

/* `qvr_ode_solve` by ROS34PW2: h0 <= 0 lets each chain choose its first step. */
int qvr_ode_solve_stiff(int batch, const double *z0, const double *th, double t0, int T,
                        const double *ts, double rtol, double atol, long max_steps, double h0,
                        double *out, double *sens) {
    memset(E, 0, sizeof E);
    for (int j = 0; j < M; j++) E[j * P + j] = 1.0;
    int failed = 0;
    for (int b = 0; b < batch; b++) {
        double *o = out + (long)b * T * N, *s = sens + (long)b * T * N * P;
        if (stiff_chain(z0 + (long)b * N, th + (long)b * M, t0, T, ts, rtol, atol, max_steps,
                        h0, o, s)) {
            for (long q = 0; q < (long)T * N; q++) o[q] = NAN;
            for (long q = 0; q < (long)T * N * P; q++) s[q] = NAN;
            failed++;
        }
    }
    return failed;
}
"""

# The solver: adaptive Dormand-Prince 5(4), its tableau as runtime/ode.py's, on the state
# and its tangents, for each chain of a batch (see the module's docstring).
_SOLVER = (
    r"""
#include <math.h>
#include <string.h>

#define N %(n)d
#define M %(m)d
#define P %(p)d
#define READS_TIME %(reads_time)d

static double E[M * P];  /* theta's own tangents: the unit vectors */
static long STEPS[2];    /* steps kept and rejected, both solvers, since qvr_ode_counts */

static void rhs(double t, const double *z, const double *S, const double *th,
                double *f, double *dF) {
    %(body)s
}

static const double C[7] = {0.0, 0.2, 0.3, 0.8, 8.0 / 9.0, 1.0, 1.0};
static const double A[7][6] = {
    {0, 0, 0, 0, 0, 0},
    {0.2, 0, 0, 0, 0, 0},
    {3.0 / 40.0, 9.0 / 40.0, 0, 0, 0, 0},
    {44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0, 0, 0},
    {19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0, 0},
    {9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0, 0},
    {35.0 / 384.0, 0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0}};
static const double ERR[7] = {71.0 / 57600.0, 0.0, -71.0 / 16695.0, 71.0 / 1920.0,
                              -17253.0 / 339200.0, 22.0 / 525.0, -1.0 / 40.0};

/* One chain: 0 when solved, 1 when an interval needs more than max_steps steps (or a
   step shrinks to nothing: a solution that blows up is rejected until it does). */
static int chain(const double *z0, const double *th, double t0, int T, const double *ts,
                 double rtol, double atol, long max_steps, double h0, double *out,
                 double *sens) {
    double y[N], S[N * P], x[N], dx[N * P], k[7][N], dk[7][N * P];
    memcpy(y, z0, sizeof y);
    memset(S, 0, sizeof S);
    for (int i = 0; i < N; i++) S[i * P + M + i] = 1.0;
    double t = t0, h = h0;
    rhs(t, y, S, th, k[0], dk[0]);
    for (int j = 0; j < T; j++) {
        double end = ts[j];
        double tiny = 1e-12 * (fabs(end) > 1.0 ? fabs(end) : 1.0);
        long taken = 0;
        while (t < end) {
            if (taken >= max_steps || h < tiny || !isfinite(h)) return 1;
            int last = end - (t + h) <= tiny;
            double size = last ? end - t : h;
            for (int s = 1; s < 7; s++) {
                for (int i = 0; i < N; i++) {
                    double acc = y[i];
                    for (int r = 0; r < s; r++) acc += size * A[s][r] * k[r][i];
                    x[i] = acc;
                }
                for (int q = 0; q < N * P; q++) {
                    double acc = S[q];
                    for (int r = 0; r < s; r++) acc += size * A[s][r] * dk[r][q];
                    dx[q] = acc;
                }
                rhs(t + C[s] * size, x, dx, th, k[s], dk[s]);
            }
            double ratio = 0.0;
            for (int i = 0; i < N; i++) {
                double e = 0.0;
                for (int r = 0; r < 7; r++) e += size * ERR[r] * k[r][i];
                double scale = atol + rtol * fmax(fabs(y[i]), fabs(x[i]));
                double q = fabs(e) / scale;
                if (isnan(q) || isnan(ratio)) ratio = NAN;  /* a NaN is never within */
                else if (q > ratio) ratio = q;
            }
            /* the tangents are held to the same test, as Stan's coupled system is: a
               gradient as accurate as the value keeps NUTS's energy error small */
            for (int q = 0; q < N * P; q++) {
                double e = 0.0;
                for (int r = 0; r < 7; r++) e += size * ERR[r] * dk[r][q];
                double scale = atol + rtol * fmax(fabs(S[q]), fabs(dx[q]));
                double u = fabs(e) / scale;
                if (isnan(u) || isnan(ratio)) ratio = NAN;
                else if (u > ratio) ratio = u;
            }
            double grow = isfinite(ratio) ? (ratio == 0.0 ? 5.0 : 0.9 * pow(ratio, -0.2)) : 0.2;
            double proposal = size * fmin(5.0, fmax(0.2, grow));
            if (ratio <= 1.0) {
                taken++;
                STEPS[0]++;
                t = last ? end : t + size;
                memcpy(y, x, sizeof y);
                memcpy(S, dx, sizeof S);
                memcpy(k[0], k[6], sizeof k[0]);
                memcpy(dk[0], dk[6], sizeof dk[0]);
                h = last ? fmax(h, proposal) : proposal;
            } else {
                STEPS[1]++;
                h = proposal;
            }
        }
        memcpy(out + (long)j * N, y, sizeof y);
        memcpy(sens + (long)j * N * P, S, sizeof S);
    }
    return 0;
}

/* Each of `batch` chains; a chain that fails gets NaN everywhere. Returns the failures. */
int qvr_ode_solve(int batch, const double *z0, const double *th, double t0, int T,
                  const double *ts, double rtol, double atol, long max_steps, double h0,
                  double *out, double *sens) {
    memset(E, 0, sizeof E);
    for (int j = 0; j < M; j++) E[j * P + j] = 1.0;
    int failed = 0;
    for (int b = 0; b < batch; b++) {
        double *o = out + (long)b * T * N, *s = sens + (long)b * T * N * P;
        if (chain(z0 + (long)b * N, th + (long)b * M, t0, T, ts, rtol, atol, max_steps, h0,
                  o, s)) {
            for (long q = 0; q < (long)T * N; q++) o[q] = NAN;
            for (long q = 0; q < (long)T * N * P; q++) s[q] = NAN;
            failed++;
        }
    }
    return failed;
}

/* The steps each solver kept and rejected since the last call (the bench's count). */
void qvr_ode_counts(long *out) {
    out[0] = STEPS[0];
    out[1] = STEPS[1];
    STEPS[0] = STEPS[1] = 0;
}
"""
    + _STIFF
)


@dataclass(frozen=True)
class Compiled:
    """A body's solvers, compiled: `solve` (Dormand-Prince, `ode_rk45`) and `solve_stiff`
    (ROS34PW2, `ode_bdf`), C functions of the same arguments; `counts` the steps they kept
    and rejected since its last call; the sizes they are made for (N state entries, M
    entries of theta, P = M + N tangents)."""

    solve: Callable[..., int]
    solve_stiff: Callable[..., int]
    counts: Callable[..., None]
    n: int
    m: int

    def steps(self) -> tuple[int, int]:
        """The steps kept and rejected since the last call, over every chain and solve."""
        out = (ctypes.c_long * 2)()
        self.counts(out)
        return int(out[0]), int(out[1])

    @property
    def p(self) -> int:
        return self.m + self.n


def source(body: Body) -> str:
    """The C of the body's solver (NotWritten where the body uses what C here does not)."""
    writer = _Writer(body)
    text = writer.source()
    reads_time = int(reads(body, body.params[0]))
    return _SOLVER % {
        "n": writer.n, "m": writer.m, "p": writer.p, "body": text, "reads_time": reads_time,
        "alpha": _c_rows(ros.ALPHA), "coupling": _c_rows(ros.COUPLING), "b": _c_row(ros.B),
        "error": _c_row(ros.ERROR), "nodes": _c_row(ros.NODES),
        "time_weights": _c_row(ros.TIME_WEIGHTS), "gamma": repr(ros.GAMMA),
        "exponent": repr(ros.EXPONENT), "time_step": repr(ros.TIME_STEP),
    }  # fmt: skip


def reads(body: Body, name: str) -> bool:
    """Whether the body reads the parameter `name` (a right-hand side of t needs df/dt)."""
    return any(name in refs(term) for term in (*(t for _, t in body.lines), body.result))


def _c_row(values: tuple[float, ...]) -> str:
    """A C initializer of four doubles, exact (Python's repr of a float reads back as it)."""
    return "{" + ", ".join(repr(float(v)) for v in (*values, *[0.0] * (4 - len(values)))) + "}"


def _c_rows(rows: tuple[tuple[float, ...], ...]) -> str:
    return "{" + ", ".join(_c_row(r) for r in rows) + "}"


@functools.lru_cache(maxsize=64)
def compiled(body: Body) -> Compiled | None:
    """The body's compiled solver, or None: no C compiler here, or a body C is not
    written for (the torch solver then runs)."""
    try:
        text = source(body)
    except NotWritten:
        return None
    path = _library(text)
    if path is None:
        return None
    try:
        library = ctypes.CDLL(path)
    except OSError:
        return None
    double_p = ctypes.POINTER(ctypes.c_double)
    solvers = library.qvr_ode_solve, library.qvr_ode_solve_stiff
    for solve in solvers:
        solve.argtypes = [
            ctypes.c_int, double_p, double_p, ctypes.c_double, ctypes.c_int, double_p,
            ctypes.c_double, ctypes.c_double, ctypes.c_long, ctypes.c_double, double_p, double_p,
        ]  # fmt: skip
        solve.restype = ctypes.c_int
    counts = library.qvr_ode_counts
    counts.argtypes = [ctypes.POINTER(ctypes.c_long)]
    counts.restype = None
    return Compiled(*solvers, counts, max(body.sizes[1], 1), max(body.sizes[2], 1))


def _library(text: str) -> str | None:
    """The shared library of `text`, compiled into the cache folder once (the name is
    the source's hash), or None when no compiler makes it."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    key = hashlib.sha256(f"{compiler}\n{sys.platform}\n{text}".encode()).hexdigest()[:24]
    folder = _cache_folder()
    path = os.path.join(folder, f"ode-{key}.so")
    if os.path.exists(path):
        return path
    with tempfile.TemporaryDirectory() as tmp:
        c_file = os.path.join(tmp, "ode.c")
        built = os.path.join(tmp, "ode.so")
        with open(c_file, "w", encoding="utf-8") as f:
            f.write(text)
        command = [compiler, "-O2", "-std=c99", "-fPIC", "-shared", c_file, "-o", built, "-lm"]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=120)
        except (OSError, subprocess.SubprocessError):
            return None
        try:
            temporary = f"{path}.{os.getpid()}.tmp"
            shutil.copyfile(built, temporary)
            os.replace(temporary, path)  # whole or not at all: another process may load it
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(temporary)
            return None
    return path


def _cache_folder() -> str:
    """The user's own cache folder of compiled solvers, made private; where it cannot be
    made, or others may write to it, a private temporary folder of this process instead:
    a library another user planted under the expected name would run in this process."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "qvr", "ode")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    except OSError:
        return _private_folder()
    getuid = getattr(os, "getuid", None)
    if (getuid is not None and info.st_uid != getuid()) or info.st_mode & 0o022:
        return _private_folder()
    return folder


@functools.cache
def _private_folder() -> str:
    folder = tempfile.mkdtemp(prefix="qvr-ode-")  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    return folder
