"""What every export reads from the checked module: plates, data, problems (export.plan)."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.export import TARGETS, exportable_programs, target, target_diagnostics
from qvr_core.export.plan import Plan, Plate, make_plan
from qvr_core.host.version import installed_version
from tests.conftest import EXAMPLES
from tests.export.reference import checked

POOLING = """\
object School : FinSet 8

program school_effects(spread : Real, K : FinSet) : K -> K
    sample z : K <- Normal(0.0, 1.0)
    let effect = spread * z
    return effect

program pooled : School -> School
    sample theta <- school_effects(0.6, School)
    sample sigma <- LogNormal(0.0, 0.5)
    observe y : School <- Normal(theta, sigma)
    return theta

export pooled
"""


def plan(name: str) -> Plan:
    module = checked(name)
    made = make_plan(module, module.exports[0], f"{name}.qvr")
    assert isinstance(made, Plan), made
    return made


def test_plates_come_with_their_sizes_including_the_axes_of_one_draw() -> None:
    assert dict(plan("hierarchical_logistic").plates) == {
        "County": Plate("County", 6),
        "Obs": Plate("Obs", 120),
    }
    # emit's `over=Symbol` is the axis of one Dirichlet draw: a size the targets declare too
    assert set(plan("hmm").plates) == {"State", "Symbol", "Sequence"}


def test_data_rows_line_up_with_the_observe_that_reads_them() -> None:
    p = plan("hierarchical_logistic")
    county, x, y = (p.datum(n) for n in ("county", "x", "y"))
    assert county is not None and x is not None and y is not None
    # the checker knows `county` and `x` only as "rows of the data"; `observe y : Obs`
    # reads them (through eta and p), so their rows are Obs's
    assert (county.axes, county.integer, county.indexes) == (("Obs",), True, "County")
    assert (x.axes, x.integer, x.observed) == (("Obs",), False, False)
    assert (y.axes, y.integer, y.observed) == (("Obs",), True, True)
    assert p.axes("eta") == ("Obs",) and p.axes("alpha") == ("County",)
    assert p.axes("beta") == ()


def test_the_header_names_qvr_its_version_the_source_and_the_program() -> None:
    header = plan("linear_regression").header(TARGETS["stan"])
    assert header.splitlines()[0] == (
        "// Stan code for the QVR program `linear_regression` in linear_regression.qvr,"
    )
    assert f"exported by qvr {installed_version()}" in header
    assert all(line.startswith("//") for line in header.splitlines())
    assert plan("linear_regression").header(TARGETS["pymc"]).startswith("# PyMC code")


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_a_draw_through_another_program_is_located_for_every_target(name: str) -> None:
    module = check(POOLING)
    assert module.ok, module.errors
    found = target_diagnostics(module, target(name))
    assert [(d.code, d.span.start_line + 1, d.span.start_col + 1) for d in found] == [
        ("QVR701", 9, 5)
    ]
    assert "`school_effects`" in found[0].message
    assert dict(found[0].data) == {"target": name, "program": "pooled"}


def test_a_network_is_located_at_its_name() -> None:
    text = (EXAMPLES / "vanilla_rnn_lm.qvr").read_text()
    module = check(text)
    found = target_diagnostics(module, target("numpyro"))
    assert found and all(d.code == "QVR701" for d in found)
    program = module.exports[0]
    assert text[found[0].span.start : found[0].span.end] == program
    assert "program of morphisms" in found[0].message


def test_the_programs_looked_at_are_the_exports_or_else_every_model() -> None:
    assert exportable_programs(check(POOLING)) == ("pooled",)
    without = check(POOLING.replace("export pooled\n", ""))
    assert exportable_programs(without) == ("pooled",)  # school_effects is a template
    template = check(POOLING.replace("export pooled", "export school_effects"))
    found = target_diagnostics(template, target("pymc"))
    assert [(d.span.start_line + 1, d.span.start_col + 1) for d in found] == [(3, 9)]
    assert "parameters (`spread`, `K`)" in found[0].message
    assert target("STAN") is TARGETS["stan"]
    with pytest.raises(KeyError, match="choose stan, numpyro, pymc"):
        target("bugs")
