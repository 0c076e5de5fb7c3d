"""A call of `ode_rk45` in a model's let (issue 49): a define over vectors as its
right-hand side, Stan's `ode_rk45(f, z0, t0, ts, theta)`.

The define is typed (`z : State -> Real`, `z[0]`, `[du, dv]`), the call's value is one
state per output time (the data's rows, then the define's state plate), its term carries
the define's body, and each misuse is reported at what it is about: the define named (not
one, not typed, of the wrong arity, impure), the call's count, the lengths of z0 and theta,
times that are not data.
"""

from __future__ import annotations

from qvr_core.check import check
from qvr_core.check.model import Let
from qvr_core.check.terms import Call, subterms
from qvr_core.check.types import Plated
from tests.lotka_volterra import HEAD
from tests.lotka_volterra import program as _program


def _problems(text: str) -> list[tuple[str, str]]:
    """(code, the text under the span) of each error and warning."""
    module = check(text)
    return [
        (d.code, text[d.span.start : d.span.end])
        for d in module.diagnostics
        if d.severity.name in ("ERROR", "WARNING")
    ]


def test_the_call_types_one_state_per_output_time_and_carries_the_body() -> None:
    text = _program("    let z = ode_rk45(lv, z0, 0.0, ts, theta)")
    module = check(text)
    assert not [d for d in module.diagnostics if d.severity.name in ("ERROR", "WARNING")]
    model = module.models["m"]
    (let,) = [s for s in model.steps if isinstance(s, Let) and s.name == "z"]
    assert isinstance(let.type, Plated)
    assert [p.name for p in let.type.plates] == ["State"] and let.type.data_plates
    (call,) = [t for t in subterms(let.term) if isinstance(t, Call)]
    assert call.function is not None and call.function.name == "lv"
    assert call.function.sizes == (0, 2, 4)
    assert len(call.args) == 4  # the define is the body, not an argument
    assert "lv" not in let.uses and "ts" in let.uses
    assert "lv" not in [d.name for d in model.data]


def test_the_tolerances_are_numbers_of_the_call() -> None:
    text = _program("    let z = ode_rk45_tol(lv, z0, 0.0, ts, 1e-5, 1e-3, 500, theta)")
    assert _problems(text) == []


def test_a_name_that_is_no_define() -> None:
    assert _problems(_program("    let z = ode_rk45(z0, z0, 0.0, ts, theta)")) == [("QVR104", "z0")]
    assert _problems(_program("    let z = ode_rk45(lvv, z0, 0.0, ts, theta)")) == [
        ("QVR101", "lvv")
    ]
    assert _problems(_program("    let z = ode_rk45(State, z0, 0.0, ts, theta)")) == [
        ("QVR104", "State")
    ]


def test_the_call_s_count_is_reported_at_the_call() -> None:
    assert _problems(_program("    let z = ode_rk45(lv, z0, 0.0, ts)")) == [
        ("QVR406", "ode_rk45(lv, z0, 0.0, ts)")
    ]


def test_a_define_of_other_values_than_t_z_theta() -> None:
    head = HEAD.replace("theta : Rate -> Real)", "theta : Rate -> Real, extra : Real)")
    text = _program("    let z = ode_rk45(lv, z0, 0.0, ts, theta)", head=head)
    assert _problems(text) == [("QVR406", "lv")]


def test_a_define_that_returns_another_length_than_its_state() -> None:
    head = HEAD.replace("return [du, dv]", "return [du, dv, du]")
    assert _problems(_program("    let z = ode_rk45(lv, z0, 0.0, ts, theta)", head=head)) == [
        ("QVR404", "[du, dv, du]")
    ]


def test_vectors_of_other_lengths_than_the_define_s() -> None:
    text = _program("    let z = ode_rk45(lv, [1.0, 2.0, 3.0], 0.0, ts, theta)")
    assert _problems(text) == [("QVR207", "[1.0, 2.0, 3.0]")]
    text = _program("    let z = ode_rk45(lv, z0, 0.0, ts, z0)")
    assert _problems(text) == [("QVR207", "z0")]


def test_output_times_that_are_not_data() -> None:
    text = _program(
        "    sample when <- HalfNormal(1.0)", "    let z = ode_rk45(lv, z0, when, ts, theta)"
    )
    assert _problems(text) == [("QVR104", "when")]
    text = _program(
        "    let later = ts + theta[0]", "    let z = ode_rk45(lv, z0, 0.0, later, theta)"
    )
    assert _problems(text) == [("QVR104", "later")]


def test_times_computed_from_data_only_are_data() -> None:
    text = _program(
        "    let years = ts - 1900.0", "    let z = ode_rk45(lv, z0, 0.0, years, theta)"
    )
    assert _problems(text) == []


def test_an_impure_define_is_refused_at_the_call() -> None:
    head = HEAD.replace("!{} =", "!{random} =").replace(
        "    return [du, dv]",
        '    let e <- perform random.sample[Real](site("e"), Normal(0.0, 1.0))\n'
        "    return [du, dv]",
    )
    head += "instance random : Random\n\n"
    text = _program("    let z = ode_rk45(lv, z0, 0.0, ts, theta)", head=head)
    assert ("QVR410", "lv") in _problems(text)


def test_the_define_s_body_is_checked_where_it_is_written() -> None:
    head = HEAD.replace("let v = z[1]", "let v = z[2]")
    text = _program("    let z = ode_rk45(lv, z0, 0.0, ts, theta)", head=head)
    assert ("QVR409", "2") in _problems(text)
    head = HEAD.replace("let du = (theta[0] - theta[1] * v) * u", "let du = z * theta")
    assert ("QVR207", "z * theta") in _problems(_program("    let z = z0", head=head))


def test_a_vector_define_is_no_call_step() -> None:
    """A call step inlines numbers; a function of vectors is a solver's: the program keeps
    the names-only check, saying which call."""
    text = _program("    let z <- lv(0.0, z0, theta)")
    module = check(text)
    (note,) = [d for d in module.diagnostics if d.code == "QVR011"]
    assert "its call of lv" in note.message


def test_ode_bdf_is_typed_and_misused_as_ode_rk45_is() -> None:
    """The stiff solver has ode_rk45's signatures, value and located errors."""
    text = _program("    let z = ode_bdf(lv, z0, 0.0, ts, theta)")
    assert _problems(text) == []
    (let,) = [s for s in check(text).models["m"].steps if isinstance(s, Let) and s.name == "z"]
    assert isinstance(let.type, Plated) and [p.name for p in let.type.plates] == ["State"]
    tol = "    let z = ode_bdf_tol(lv, z0, 0.0, ts, 1e-8, 1e-8, 10000, theta)"
    assert _problems(_program(tol)) == []
    assert _problems(_program("    let z = ode_bdf(lvv, z0, 0.0, ts, theta)")) == [
        ("QVR101", "lvv")
    ]
    assert _problems(_program("    let z = ode_bdf_tol(lv, z0, 0.0, ts, theta)")) == [
        ("QVR406", "ode_bdf_tol(lv, z0, 0.0, ts, theta)")
    ]
