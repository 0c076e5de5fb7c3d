"""The subsample plan of a plate: which data a minibatch slices on which axis, which
terms scale by N/B, which latent sites are local, or the located reason it cannot be."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.check.subsample import Refusal, SubsamplePlan, subsample_plan

MODELS = Path(__file__).resolve().parents[2] / "examples" / "models"

HEADER = (
    "object Row : FinSet 50\n"
    "object Group : FinSet 3\n"
    "object One : FinSet 1\n"
    "object Component : FinSet 2\n"
    "object Val : Real 1\n"
    "\n"
)


def _example(name: str) -> CheckedModule:
    return check((MODELS / f"{name}.qvr").read_text())


def _program(body: str) -> CheckedModule:
    """`body` as program `p` after HEADER: its steps start on line 8."""
    module = check(HEADER + "program p : Row -> Row\n" + body + "\nexport p\n")
    assert "p" in module.models, [d.message for d in module.diagnostics]
    return module


def _plan(module: CheckedModule, plate: str, program: str = "p") -> SubsamplePlan:
    plan = subsample_plan(module, program, plate)
    assert isinstance(plan, SubsamplePlan), plan
    return plan


def _refusal(module: CheckedModule, plate: str, program: str = "p") -> Refusal:
    got = subsample_plan(module, program, plate)
    assert isinstance(got, Refusal), got
    assert "\n" not in got.message
    if got.line is not None:
        assert got.message.startswith(f"line {got.line}: ")
    return got


# -- the example models --------------------------------------------------------------


def test_linear_regression_slices_x_and_y_and_scales_the_observe() -> None:
    plan = _plan(_example("linear_regression"), "Row", "linear_regression")
    assert (plan.plate, plan.size) == ("Row", 50)
    assert dict(plan.data_axes) == {"x": 0, "y": 0}  # x: data-sized rows lined up with Row
    assert plan.scaled == {"y"}
    assert dict(plan.local) == {}


def test_a_mixture_scales_its_marginalize_scope_not_the_observe_inside() -> None:
    plan = _plan(_example("gaussian_mixture"), "Point", "gaussian_mixture")
    assert (plan.size, dict(plan.data_axes), plan.scaled) == (100, {"y": 0}, {"z"})
    assert dict(plan.local) == {}


def test_hierarchical_logistic_slices_the_index_and_covariate_rows() -> None:
    plan = _plan(_example("hierarchical_logistic"), "Obs", "hierarchical_logistic")
    assert dict(plan.data_axes) == {"county": 0, "x": 0, "y": 0}
    assert plan.scaled == {"y"} and dict(plan.local) == {}


def test_the_hmm_scales_its_outermost_scope_and_slices_every_emission() -> None:
    plan = _plan(_example("hmm"), "Sequence", "hmm")
    assert dict(plan.data_axes) == {f"o{i}": 0 for i in range(4)}
    assert plan.scaled == {"s0"} and dict(plan.local) == {}


# -- plans of small programs ---------------------------------------------------------


def test_a_latent_over_the_plate_is_local_and_scaled() -> None:
    module = _program(
        "    sample alpha <- Normal(0.0, 10.0)\n"
        "    sample sigma <- HalfNormal(5.0)\n"
        "    sample u : Row <- Normal(0.0, 1.0)\n"
        "    let mu = alpha + u\n"
        "    observe y : Row <- Normal(mu, sigma)\n"
        "    return mu"
    )
    plan = _plan(module, "Row")
    assert dict(plan.local) == {"u": 0}
    assert plan.scaled == {"u", "y"} and dict(plan.data_axes) == {"y": 0}


def test_the_plate_second_in_a_value_is_its_axis_one() -> None:
    module = _program(
        "    sample sigma <- HalfNormal(5.0)\n"
        "    sample g : Group <- Normal(0.0, 1.0)\n"
        "    observe y : Group * Row <- Normal(g, sigma)\n"
        "    return g"
    )
    assert dict(_plan(module, "Row").data_axes) == {"y": 1}
    by_group = _plan(module, "Group")
    assert (by_group.size, dict(by_group.data_axes)) == (3, {"y": 0})
    assert dict(by_group.local) == {"g": 0} and by_group.scaled == {"g", "y"}


def test_a_one_entry_plate_before_the_plate_adds_no_axis() -> None:
    module = _program(
        "    sample sigma <- HalfNormal(5.0)\n"
        "    observe y : One * Row <- Normal(0.0, sigma)\n"
        "    return sigma"
    )
    assert dict(_plan(module, "Row").data_axes) == {"y": 0}


def test_a_summable_latent_and_a_score_over_the_plate_are_scaled_not_local() -> None:
    module = _program(
        "    sample k : Row <- Bernoulli(0.5)\n"
        "    score s = -0.5 * k * k\n"
        "    observe y : Row <- Normal(k, 1.0)\n"
        "    return k"
    )
    plan = _plan(module, "Row")
    assert plan.scaled == {"k", "s", "y"} and dict(plan.local) == {}


# -- refusals, each at its line ------------------------------------------------------


def test_a_name_that_is_no_model_is_refused() -> None:
    module = _example("linear_regression")
    got = _refusal(module, "Row", "nope")
    assert got.line is None and "`nope` is not a model program" in got.message
    morphisms = check((MODELS.parent / "linear_regression.qvr").read_text())
    got = _refusal(morphisms, "X", "linear_regression")
    assert got.line == 12 and "program of morphisms" in got.message


@pytest.mark.parametrize(
    ("plate", "line", "words"),
    [
        ("Nope", None, "`Nope` is not a FinSet object"),
        ("Val", 5, "`Val` is not a FinSet object"),
        ("One", 3, "`One` has one entry"),
        ("Component", 7, "no observed site runs over Component"),
    ],
)
def test_a_plate_that_cannot_be_subsampled_is_refused(
    plate: str, line: int | None, words: str
) -> None:
    module = _program(
        "    sample sigma <- HalfNormal(5.0)\n"
        "    observe y : One * Row <- Normal(0.0, sigma)\n"
        "    return sigma"
    )
    got = _refusal(module, plate)
    assert got.line == line and words in got.message


def test_a_draw_through_another_program_is_refused() -> None:
    module = check(
        HEADER + "program effects(spread : Real, K : FinSet) : K -> K\n"
        "    sample z : K <- Normal(0.0, 1.0)\n"
        "    let effect = spread * z\n"
        "    return effect\n\n"
        "program p : Row -> Row\n"
        "    sample theta <- effects(0.6, Row)\n"
        "    observe y : Row <- Normal(theta, 1.0)\n"
        "    return theta\n\n"
        "export p\n"
    )
    got = _refusal(module, "Row")
    assert got.line == 13 and "draws through another program (`effects`)" in got.message


def test_a_program_with_a_runtime_gap_is_refused_at_the_gaps_line() -> None:
    module = check(
        "object H : FinSet 3\n"
        "object K : FinSet 2\n\n"
        "program p : K -> K\n"
        "    sample w : K <- Normal(0.0, 1.0) [over=H]\n"
        "    sample h : H <- Normal(0.0, 1.0)\n"
        "    let z = w[h]\n"
        "    observe y : K <- Normal(z, 1.0)\n"
        "    return z\n\n"
        "export p\n"
    )
    assert module.models["p"].runtime_gaps
    got = _refusal(module, "K")
    assert got.line == 7 and "qvr cannot run `p` yet: w[h] contracts along" in got.message


def test_a_let_that_sums_the_rows_is_refused() -> None:
    module = _program(
        "    sample alpha <- Normal(0.0, 10.0)\n"
        "    let mu = alpha * x\n"
        "    observe y : Row <- Normal(mu, 1.0)\n"
        "    let m = sum(x)\n"
        "    sample s <- Normal(m, 1.0)\n"
        "    return mu"
    )
    got = _refusal(module, "Row")
    assert got.line == 11
    assert got.message.startswith("line 11: `let m = ...` reduces over Row's rows")
    assert got.message.endswith("a subsampled plate must stay per row")


def test_a_let_over_the_rows_that_reduces_inside_is_refused() -> None:
    module = _program(
        "    sample alpha <- Normal(0.0, 10.0)\n"
        "    let c = x - mean(x)\n"
        "    let mu = alpha * c\n"
        "    observe y : Row <- Normal(mu, 1.0)\n"
        "    return mu"
    )
    got = _refusal(module, "Row")
    assert got.line == 9 and "`let c = ...` reduces over Row's rows (`mean`" in got.message


def test_a_last_axis_function_along_the_plate_is_refused() -> None:
    module = _program(
        "    sample u : Row <- Normal(0.0, 1.0)\n"
        "    let w = softmax(u)\n"
        "    observe y : Row <- Normal(w, 1.0)\n"
        "    return w"
    )
    got = _refusal(module, "Row")
    assert got.line == 9 and "mixes Row's rows (`softmax`" in got.message


def test_a_let_that_picks_rows_by_index_is_refused() -> None:
    module = _program(
        "    sample u : Row <- Normal(0.0, 1.0)\n"
        "    let v = u[k]\n"
        "    observe y : Row <- Normal(v, 1.0)\n"
        "    return u"
    )
    got = _refusal(module, "Row")
    assert got.line == 9 and "picks Row's rows of `u` by index" in got.message


def test_a_site_off_the_plate_that_reads_a_value_over_it_is_refused() -> None:
    module = _program(
        "    sample u : Row <- Normal(0.0, 1.0)\n"
        "    observe y : Row <- Normal(u, 1.0)\n"
        "    observe v : Group <- Normal(u[g], 1.0)\n"
        "    return u"
    )
    got = _refusal(module, "Row")
    assert got.line == 10 and "`observe v` picks Row's rows of `u`" in got.message
    inside = _program(
        "    sample weights <- Dirichlet(2.0) [over=Component]\n"
        "    sample mu : Component <- Normal(0.0, 10.0)\n"
        "    marginalize z : Component <- Categorical(weights) [over=Row]\n"
        "        observe y : Row <- Normal(mu[z], 1.0)\n"
        "        observe w <- Normal(mu[z], 1.0)\n"
        "    return weights"
    )
    got = _refusal(inside, "Row")
    assert got.line == 12 and "`observe w` reduces over Row's rows" in got.message


def test_a_draw_whose_one_value_spans_the_plate_is_refused() -> None:
    module = _program(
        "    sample w <- Dirichlet(1.0) [over=Row]\n"
        "    observe y : Row <- Normal(w, 1.0)\n"
        "    return w"
    )
    got = _refusal(module, "Row")
    assert got.line == 8 and "one draw of `sample w` spans Row (`over=Row`)" in got.message


def test_rows_summed_inside_a_marginalize_that_does_not_group_by_the_plate_are_refused() -> None:
    module = _program(
        "    sample weights <- Dirichlet(2.0) [over=Component]\n"
        "    sample mu : Component <- Normal(0.0, 10.0)\n"
        "    marginalize z : Component <- Categorical(weights)\n"
        "        observe y : Row <- Normal(mu[z], 1.0)\n"
        "    return weights"
    )
    got = _refusal(module, "Row")
    assert got.line == 11
    assert "`observe y` runs over Row inside `marginalize z`, which does not group" in (got.message)


def test_data_rows_no_one_plate_lines_up_are_refused() -> None:
    module = _program(
        "    sample a <- Normal(0.0, 1.0)\n"
        "    let mu = a * x\n"
        "    observe y : Row <- Normal(mu, 1.0)\n"
        "    observe v : Group <- Normal(x, 1.0)\n"
        "    return mu"
    )
    got = _refusal(module, "Row")
    assert got.line == 9 and "reads `x`, whose rows the data sizes" in got.message


# -- properties ----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.sampled_from([1, 2, 4]), max_size=2),
    data=st.data(),
)
def test_the_plates_axis_counts_the_plates_before_it_of_more_than_one_entry(
    sizes: list[int], data: st.DataObject
) -> None:
    others = [f"A{i}" for i in range(len(sizes))]
    at = data.draw(st.integers(0, len(others)))
    plates = [*others[:at], "Row", *others[at:]]
    objects = "".join(f"object {n} : FinSet {s}\n" for n, s in zip(others, sizes, strict=True))
    written = " * ".join(plates)
    module = check(
        f"object Row : FinSet 20\n{objects}\n"
        "program p : Row -> Row\n"
        f"    sample u : {written} <- Normal(0.0, 1.0)\n"
        f"    observe y : {written} <- Normal(u, 1.0)\n"
        "    return u\n\n"
        "export p\n"
    )
    axis = sum(1 for s in sizes[:at] if s != 1)
    plan = _plan(module, "Row")
    assert dict(plan.data_axes) == {"y": axis} and dict(plan.local) == {"u": axis}
    assert plan.scaled == {"u", "y"} and plan.size == 20
