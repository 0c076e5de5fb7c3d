"""An ODE solve in an export (issue 49): `ode_rk45` and the stiff `ode_bdf`, with and
without tolerances, are QVR701 at the call in each target, with the reason that target
has (Stan's solvers take a `functions` block's function, PyMC's a Python one, JAX has no
stiff solver), never a program that solves another ODE or none."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program
from tests.lotka_volterra import program

CALLS = {
    "ode_rk45": "ode_rk45(lv, z0, 0.0, ts, theta)",
    "ode_rk45_tol": "ode_rk45_tol(lv, z0, 0.0, ts, 1e-5, 1e-3, 500, theta)",
    "ode_bdf": "ode_bdf(lv, z0, 0.0, ts, theta)",
    "ode_bdf_tol": "ode_bdf_tol(lv, z0, 0.0, ts, 1e-8, 1e-8, 10000, theta)",
}
#: What each target's reason names for the stiff solver.
STIFF_REASON = {"stan": "ode_bdf", "numpyro": "no stiff solver", "pymc": "sunode"}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_solver_call_is_qvr701_at_the_call(target: str, name: str) -> None:
    call = CALLS[name]
    text = program(f"    let z = {call}")
    module = check(text)
    assert module.ok, [(d.code, d.message) for d in module.diagnostics]
    out = export_program(module, TARGETS[target], "m")
    assert out.text is None
    assert [d.code for d in out.diagnostics] == ["QVR701"]
    (problem,) = out.diagnostics
    assert text[problem.span.start : problem.span.end] == call
    if name.startswith("ode_bdf"):
        assert STIFF_REASON[target] in problem.message
