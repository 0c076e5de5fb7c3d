"""`repeat(f)` without a count means what quivers 0.25.2 computes for it.

Read from quivers (the 0.25.2 wheel, `dsl/compiler/expressions.py` and
`core/morphisms.py`, `RepeatMorphism`): `repeat(f)` with no count compiles to a
runtime-variable repeat of the endomorphism `f`, `n_steps = 1` at first, which the
program's Python sets later (an HMM's horizon), its tensor the n-fold composition of
`f`'s under the file's rule; `f` must be `A -> A`. qvr types it `A -> A` and computes it
the same way, the count on `Repeat.n_steps`. The program is our own, written like the
guide's discrete HMM, and parsed by quivers' grammars.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.graph import build_graph
from qvr_core.runtime.combinators import Repeat
from qvr_core.runtime.compile import Compiler
from qvr_core.runtime.relations import Relation
from tests.conformance import oracle

SOURCE = """composition RULE [level=algebra]

object Weather : FinSet 3
object Reading : FinSet 2

morphism start : Weather -> Weather [role=latent]
morphism step : Weather -> Weather [role=latent]
morphism sensor : Weather -> Reading [role=latent]

define ahead = start >> repeat(step) >> sensor

export ahead
"""

RAW = {
    "start": [[0.2, -1.0, 0.4], [1.3, 0.0, -0.6], [-0.2, 0.8, 0.1]],
    "step": [[0.5, -0.3, 1.1], [-1.4, 0.9, 0.2], [0.7, 0.6, -0.8]],
    "sensor": [[1.0, -0.5], [0.3, 0.2], [-1.1, 0.9]],
}


def _source(rule: str = "real") -> str:
    return SOURCE.replace("RULE", rule)


def _compiled(rule: str = "real") -> tuple[Compiler, Repeat]:
    checked = check(_source(rule))
    assert checked.ok, [d.message for d in checked.diagnostics]
    compiler = Compiler(checked)
    let = compiler.let("ahead").double()
    with torch.no_grad():
        for m in let.modules():
            if isinstance(m, Relation):
                m.raw.copy_(torch.tensor(RAW[m.key], dtype=torch.float64))
    (repeat,) = [m for m in let.modules() if isinstance(m, Repeat)]
    return compiler, repeat


def test_quivers_grammars_parse_it() -> None:
    oracle.require_head(_source())


@pytest.mark.parametrize("era", ["0.15 and later", "0.11 to 0.14"])
def test_it_is_typed_as_its_endomorphism_without_a_diagnostic(era: str) -> None:
    source = _source()
    if era == "0.11 to 0.14":  # the guide's HMM as quivers 0.11 wrote it
        source = source.replace("[level=algebra]", "as algebra").replace("define", "let")
    module = check(source)
    assert not module.diagnostics, module.diagnostics
    assert module.lets["ahead"].type is not None
    assert module.lets["ahead"].type.label == "Weather -> Reading"


@pytest.mark.parametrize(
    ("rule", "then"),
    [
        ("real", lambda a, b: a @ b),
        ("tropical", lambda a, b: (a[:, :, None] + b[None, :, :]).amin(dim=1)),
        ("max_plus", lambda a, b: (a[:, :, None] + b[None, :, :]).amax(dim=1)),
    ],
)
def test_its_tensor_is_the_n_fold_composition_once_the_program_sets_n(
    rule: str, then: object
) -> None:
    start, step, sensor = (torch.sigmoid(torch.tensor(RAW[k], dtype=torch.float64)) for k in RAW)
    compiler, repeat = _compiled(rule)
    assert repeat.n_steps == 1  # as quivers' RepeatMorphism(f, n=1)
    for n in (1, 2, 5):
        repeat.n_steps = n
        by_hand = start
        for _ in range(n):
            by_hand = then(by_hand, step)  # type: ignore[operator]  # a formula
        by_hand = then(by_hand, sensor)  # type: ignore[operator]
        got = compiler.relation("ahead")
        torch.testing.assert_close(got, by_hand, rtol=0, atol=1e-12)


def test_a_count_below_one_is_refused() -> None:
    _, repeat = _compiled()
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="n_steps must be a whole number >= 1"):
            repeat.n_steps = bad  # type: ignore[assignment]  # what a user might write
    assert repeat.n_steps == 1


def test_a_body_that_is_not_an_endomorphism_is_refused_where_written() -> None:
    source = _source().replace("repeat(step)", "repeat(sensor)")
    errors = check(source).errors
    assert errors and errors[0].code == "QVR205", errors
    assert "must be A -> A" in errors[0].message
    assert errors[0].span.start == source.index("sensor)")


def test_three_arguments_are_one_located_error() -> None:
    source = _source().replace("repeat(step)", "repeat(step, 2, 3)")
    (found,) = check(source).errors
    assert found.message == "repeat takes 1 or 2 arguments: repeat(body) or repeat(body, n)"


def test_stack_still_needs_its_count() -> None:
    source = _source().replace("repeat(step)", "stack(step)")
    (found,) = check(source).errors
    assert found.message.startswith("stack takes 2 arguments")


def test_the_diagram_draws_it() -> None:
    graph = build_graph(check(_source()))
    labels = {data.get("label") for _, data in graph.nodes(data=True)}
    assert "repeat(step)" in labels
