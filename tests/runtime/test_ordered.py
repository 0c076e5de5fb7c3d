"""Ordered vectors at run time (`runtime/ordered.py`, a step's `[constraint=ordered]`):
Stan's bijections onto the ordered and positive ordered sets, found by `biject_to`, their
inverses and log-det Jacobians held to torch.autograd's Jacobian of the forward map; the
site's log density is the family's summed over the vector; no prior draws; a given value
that is not ordered refused with the site's line."""

from __future__ import annotations

import pytest
import torch
from torch import distributions as D

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.synthesise import synthesise
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model import ModelProgram, compile_model
from qvr_core.runtime.ordered import (
    OrderedTransform,
    PositiveOrderedTransform,
    ordered_vector,
    positive_ordered_vector,
)

SETS = [(ordered_vector, OrderedTransform), (positive_ordered_vector, PositiveOrderedTransform)]

SOURCE = """\
object K : FinSet 3
object G : FinSet 2

program p : K -> K
    sample mu : K <- Normal(0.0, 2.0) [constraint=ordered]
    sample scale : G * K <- HalfNormal(1.0) [constraint=positive_ordered]
    observe y : K <- Normal(mu, 1.0)
    return mu

export p
"""


def program() -> ModelProgram:
    checked = check(SOURCE)
    assert checked.ok, checked.diagnostics
    return compile_model(checked, "p")


@pytest.mark.parametrize(("constraint", "transform"), SETS)
def test_biject_to_finds_stans_transform(constraint: object, transform: type) -> None:
    assert isinstance(D.biject_to(constraint), transform)
    assert isinstance(D.transform_to(constraint), transform)
    t = transform()
    assert t.event_dim == 1 and t.bijective and t.codomain is constraint
    assert t == transform() and OrderedTransform() != PositiveOrderedTransform()
    assert t.forward_shape((4, 3)) == (4, 3) and t.inverse_shape((3,)) == (3,)


@pytest.mark.parametrize(("constraint", "transform"), SETS)
def test_the_transform_round_trips_into_the_set(constraint: object, transform: type) -> None:
    t = transform()
    x = torch.randn(5, 2, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    y = t(x)
    assert bool(constraint.check(y).all())  # type: ignore[attr-defined]  # a torch Constraint
    torch.testing.assert_close(t.inv(y), x, rtol=1e-12, atol=1e-12)
    assert t.log_abs_det_jacobian(x, y).shape == (5, 2)


@pytest.mark.parametrize(("constraint", "transform"), SETS)
def test_the_log_det_jacobian_is_autograds(constraint: object, transform: type) -> None:
    """Two computations of one number: the transform's closed form and log |det| of the
    Jacobian matrix torch.autograd takes of the forward map, at several points."""
    t = transform()
    g = torch.Generator().manual_seed(5)
    for k in (1, 2, 5):
        for _ in range(3):
            x = torch.randn(k, dtype=torch.float64, generator=g) * 2
            jacobian = torch.autograd.functional.jacobian(t, x)
            expected = torch.linalg.slogdet(jacobian).logabsdet
            assert float(t.log_abs_det_jacobian(x, t(x))) == pytest.approx(
                float(expected), abs=1e-12
            )


def test_the_closed_forms_are_stans() -> None:
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    e = x.exp()
    torch.testing.assert_close(
        OrderedTransform()(x), torch.stack([x[0], x[0] + e[1], x[0] + e[1] + e[2]])
    )
    torch.testing.assert_close(PositiveOrderedTransform()(x), e.cumsum(0))
    assert float(OrderedTransform().log_abs_det_jacobian(x, x)) == pytest.approx(1.0)
    assert float(PositiveOrderedTransform().log_abs_det_jacobian(x, x)) == pytest.approx(1.5)


def test_the_sets_check_each_vector() -> None:
    values = torch.tensor(
        [[1.0, 2.0, 3.0], [1.0, 1.0, 2.0], [-1.0, 0.0, 1.0], [float("nan"), 1.0, 2.0]]
    )
    assert ordered_vector.check(values).tolist() == [True, False, True, False]
    assert positive_ordered_vector.check(values).tolist() == [True, False, False, False]


@pytest.mark.parametrize(("constraint", "transform"), SETS)
def test_the_transform_runs_under_vmap(constraint: object, transform: type) -> None:
    """The chains' potential is batched by torch.func.vmap: plain tensor operations only."""
    t = transform()
    x = torch.randn(4, 3, dtype=torch.float64)
    batched = torch.func.vmap(lambda row: t.log_abs_det_jacobian(row, t(row)) + t(row).sum())(x)
    torch.testing.assert_close(batched, t.log_abs_det_jacobian(x, t(x)) + t(x).sum(-1))


def test_the_program_reports_the_constraint_inference_moves_in() -> None:
    m = program()
    assert m.site_constraint("mu") is ordered_vector
    assert m.site_constraint("scale") is positive_ordered_vector
    assert (m.site_support("mu"), m.site_support("scale")) == ("ordered", "positive_ordered")
    assert m.site_event_shape("scale") == (2, 3)


def test_the_log_density_is_the_familys_summed_not_renormalised() -> None:
    m = program()
    mu = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.float64)
    scale = torch.tensor([[0.1, 0.2, 1.5], [0.3, 2.0, 2.5]], dtype=torch.float64)
    y = torch.tensor([0.0, 1.0, 2.5], dtype=torch.float64)
    expected = (
        D.Normal(torch.tensor(0.0, dtype=torch.float64), 2.0).log_prob(mu).sum()
        + D.HalfNormal(torch.tensor(1.0, dtype=torch.float64)).log_prob(scale).sum()
        + D.Normal(mu, 1.0).log_prob(y).sum()
    )
    got = m.log_joint({}, {"mu": mu, "scale": scale, "y": y})
    assert float(got) == pytest.approx(float(expected), rel=1e-12)


def test_a_chain_starts_inside_the_sets() -> None:
    m = program()
    torch.manual_seed(0)
    for _ in range(5):
        start = m.initial_values({}, {"y": torch.zeros(3)})
        assert bool(ordered_vector.check(start["mu"]))
        assert bool(positive_ordered_vector.check(start["scale"]).all())


def test_a_given_value_that_is_not_ordered_is_refused_with_its_line() -> None:
    m = program()
    y = torch.zeros(3)
    with pytest.raises(QvrRuntimeError) as refused:
        m.run({}, {"y": y, "mu": torch.tensor([0.0, 2.0, 1.0])})
    assert str(refused.value) == (
        "program p: 'mu' (line 5) holds [0, 2, 1], outside its constraint=ordered "
        "(a strictly increasing vector of real numbers)"
    )
    scale = torch.tensor([[0.1, 0.2, 0.3], [-0.5, 1.0, 2.0]])
    with pytest.raises(
        QvrRuntimeError,
        match=r"'scale' \(line 6\) holds \[-0.5, 1, 2\], outside its constraint=positive_ordered",
    ):
        m.run({}, {"y": y, "scale": scale})


def test_no_data_is_drawn_from_such_a_prior() -> None:
    """Its prior is the family truncated to the set, which qvr does not draw: refused
    naming the site, as an improper prior is."""
    with pytest.raises(InferenceError) as refused:
        synthesise(check(SOURCE), "p")
    assert str(refused.value).startswith(
        "program p: line 5, sample mu <- Normal [constraint=ordered] is Normal held to a "
        "strictly increasing vector of real numbers, a prior qvr does not draw from"
    )
    assert "so no data can be drawn from the prior" in str(refused.value)


def test_a_template_plate_of_one_entry_is_refused_where_it_runs() -> None:
    """The checker cannot see a caller's plate of one entry: the run says there is
    nothing to order rather than ordering another axis."""
    source = (
        "object One : FinSet 1\nobject Row : FinSet 3\n\n"
        "program means(G : FinSet) : G -> G\n"
        "    sample v : G <- Normal(0.0, 1.0) [constraint=ordered]\n"
        "    return v\n\n"
        "program outer : Row -> Row\n"
        "    sample e <- means(One)\n"
        "    observe y : Row <- Normal(0.0, 1.0)\n"
        "    return e\n\n"
        "export outer\n"
    )
    checked = check(source)
    assert checked.ok, checked.diagnostics
    with pytest.raises(
        QvrRuntimeError,
        match="line 5, sample v: constraint=ordered orders 'v' along its last plate, which has one",
    ):
        compile_model(checked, "outer").run({}, {"y": torch.zeros(3)})
