"""The Lotka-Volterra model the ODE tests share (issue 49): the right-hand side as a
define over vectors, and a program around one solver call."""

from __future__ import annotations

HEAD = """\
object State : FinSet 2
object Rate : FinSet 4
object Year : FinSet 20

define lv(t : Real, z : State -> Real, theta : Rate -> Real) : State -> Real !{} =
    let u = z[0]
    let v = z[1]
    let du = (theta[0] - theta[1] * v) * u
    let dv = (-theta[2] + theta[3] * u) * v
    return [du, dv]

"""


def program(*lines: str, head: str = HEAD) -> str:
    """`head` and a program `m` whose steps between its priors and its likelihood are
    `lines` (the solver's let `z` among them)."""
    steps = [
        "    sample theta : Rate <- HalfNormal(1.0)",
        "    sample z0 : State <- HalfNormal(10.0)",
        *lines,
        "    let log_z = log(z)",
        "    observe y : Year * State <- LogNormal(log_z, 0.25)",
        "    return z",
    ]
    return head + "program m : Year -> Year\n" + "\n".join(steps) + "\n\nexport m\n"
