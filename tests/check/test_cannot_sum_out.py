"""QVR414: a discrete latent NUTS and SVI cannot sum out is a warning while the program is
typed, at the site (or at the call of a template), in the words a run's refusal uses; the
checked model holds the reasons once (`Model.unsummable`, `Model.returned_summed`) and the
runtime refuses from them (issue 48: the summed plan's refusals decided by the checker)."""

from __future__ import annotations

import pytest

from qvr_core.check import check
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model.enumerate import SummedModel
from qvr_core.runtime.model.program import compile_model

INSIDE_A_SCOPE = """\
object K : FinSet 3

program p : K -> K
    sample mu <- Normal(0.0, 1.0)
    sample probs <- Dirichlet(1.0) [over=K]
    marginalize z : K <- Categorical(probs)
        sample b <- Bernoulli(0.5)
        let m = mu + b
        observe y <- Normal(m, 1.0)
    return mu

export p
"""

CALL_IN_THE_SUM = """\
object One : FinSet 1

program shift(m : Real) : One -> One
    sample e <- Normal(m, 1.0)
    return e

program p : One -> One
    sample b <- Bernoulli(0.5)
    sample v <- shift(b)
    observe y <- Normal(v, 1.0)
    return v

export p
"""

RETURNED = """\
object One : FinSet 1

program coin : One -> One
    sample c <- Bernoulli(0.5)
    return c

program p : One -> One
    sample mu <- Normal(0.0, 1.0)
    sample v <- coin()
    observe y <- Normal(mu, 1.0)
    return mu

export p
"""

SUMMABLE = """\
object One : FinSet 1

program p : One -> One
    sample mu <- Normal(0.0, 1.0)
    sample b <- Bernoulli(0.5)
    let m = mu + b
    observe y <- Normal(m, 1.0)
    return mu

export p
"""


def _warnings(source: str) -> list[tuple[int, int, str, list[int]]]:
    """Each QVR414: its line and column, its words, and the lines of its related places
    (the call, the template's site: related information, not a line in the words)."""
    checked = check(source)
    assert not [d.message for d in checked.diagnostics if d.is_error]
    return [
        (
            d.span.start_line + 1,
            d.span.start_col + 1,
            d.message,
            [r.span.start_line + 1 for r in d.related],
        )
        for d in checked.diagnostics
        if d.code == "QVR414"
    ]


def _refusal(source: str) -> str:
    program = compile_model(check(source), "p")
    with pytest.raises(QvrRuntimeError) as info:
        SummedModel(program, program.observed_names)
    return str(info.value)


@pytest.mark.parametrize(
    ("source", "line", "col", "words", "related"),
    [
        (INSIDE_A_SCOPE, 7, 16, "a discrete site inside `marginalize z` with no data", []),
        (CALL_IN_THE_SUM, 8, 12, "and the call of shift reads it", [9]),
    ],
)
def test_the_warning_is_at_the_site_in_the_words_of_the_run_s_refusal(
    source: str, line: int, col: int, words: str, related: list[int]
) -> None:
    ((at_line, at_col, message, others),) = _warnings(source)
    assert (at_line, at_col) == (line, col) and words in message
    assert others == related and "(line" not in message
    kind = "sample b"
    assert _refusal(source) == f"line {line}, {kind}: {message}"


def test_a_template_returning_a_summed_site_is_warned_of_at_its_call() -> None:
    ((line, col, message, others),) = _warnings(RETURNED)
    assert (line, col) == (9, 17)
    assert message.startswith("template coin returns a value that depends on its discrete site")
    assert "'c'" in message and others == [4]  # where `c` is drawn, in the template
    refused = _refusal(RETURNED)
    assert refused.startswith("line 4, sample c: template coin returns a value that depends")


def test_with_data_the_site_is_scored_and_nothing_is_refused() -> None:
    program = compile_model(check(INSIDE_A_SCOPE), "p")
    SummedModel(program, [*program.observed_names, "b"])


def test_a_site_that_can_be_summed_out_is_not_warned_of_and_runs() -> None:
    assert _warnings(SUMMABLE) == []
    program = compile_model(check(SUMMABLE), "p")
    assert "b" not in SummedModel(program, program.observed_names).site_names


def test_the_example_file_shows_the_warning() -> None:
    from pathlib import Path

    text = Path(__file__).resolve().parents[2] / "examples/errors/QVR414_cannot_sum_out.qvr"
    assert [line for line, _, _, _ in _warnings(text.read_text(encoding="utf-8"))] == [9]
