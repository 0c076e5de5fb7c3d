"""One model: what the checker reports of every Bayesian program is what its compiled
program samples and scores, and what the diagram draws.

Over every example model, every QVR block of the gallery pages and every shared-corpus
file that checks, each runnable model program is compiled from the checker's `Model`
and run forward (`one_model.agreement`). A program the checker types but the runtime
cannot run is refused with a reason, never run on a guess.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.plan.runnable import runnability
from tests.conformance.shared import corpus
from tests.runtime.one_model import InvalidDraws, agreement

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```qvr\s*\n(.*?)^```", re.M | re.S)


def _sources() -> list[tuple[str, str]]:
    out = [
        (str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("examples/**/*.qvr"))
    ]
    for page in sorted((ROOT / "docs" / "gallery").glob("*.md")):
        for i, block in enumerate(_BLOCK.findall(page.read_text())):
            out.append((f"{page.name}#{i}", block))
    out += [(c.name, c.text()) for c in corpus()]
    return out


def _programs() -> list[tuple[str, str, str]]:
    """(where, source, program) for every model program of a source that checks."""
    found = []
    for where, text in _sources():
        checked = check(text)
        if not checked.ok:
            continue
        found += [(where, text, name) for name in checked.models]
    return found


PROGRAMS = _programs()


def test_the_agreement_covers_the_examples_and_the_corpus() -> None:
    wheres = {w for w, _, _ in PROGRAMS}
    assert "examples/models/hmm.qvr" in wheres
    assert "eight_schools.md#0" in wheres or any(w.startswith("eight_schools.md") for w in wheres)
    if corpus():
        assert len(PROGRAMS) >= 95  # 91 runnable and 4 refused at the time of writing


#: Programs whose data matrix the checker types by its rows only: `X * beta` with `beta :
#: Coef`, then `.sum(1)`, reads X as (rows, Coef), but the checker gives a data name only the
#: plates it is indexed by, so the agreement's data are (rows,) and torch cannot broadcast
#: them (issue 48: the resolved model carries each data name's axes). With real data they run.
_MATRIX_DATA = {
    "examples/posteriordb/diamonds-diamonds.qvr",
    "examples/posteriordb/sblrc-blr.qvr",
}


def _case(where: str, text: str, name: str) -> object:
    if where not in _MATRIX_DATA:
        return pytest.param(where, text, name, id=f"{where}:{name}")
    reason = "the checker types a data matrix by its rows only (issue 48)"
    return pytest.param(
        where, text, name, id=f"{where}:{name}", marks=pytest.mark.xfail(strict=True, reason=reason)
    )


@pytest.mark.parametrize(("where", "text", "name"), [_case(*p) for p in PROGRAMS])
def test_the_checker_and_the_compiled_program_see_one_model(
    where: str, text: str, name: str
) -> None:
    checked = check(text)
    verdict = runnability(checked, name)
    if not verdict.ok:
        assert verdict.reason  # refused, and says why
        return
    try:
        assert agreement(checked, name) == []
    except InvalidDraws as e:  # sites, data names and the diagram agreed before this
        pytest.skip(f"{where}: its prior draws arguments outside a family's range: {e}")


def test_a_real_valued_gather_is_refused_with_the_checkers_reason() -> None:
    src = """
object H : FinSet 3
object K : FinSet 2

program p : K -> K
    sample w : K <- Normal(0.0, 1.0) [over=H]
    sample h : H <- Normal(0.0, 1.0)
    let z = w[h]
    observe y : K <- Normal(z, 1.0)
    return z

export p
"""
    checked = check(src)
    verdict = runnability(checked, "p")
    assert verdict.kind is None
    assert verdict.reason is not None and "w[h] contracts along" in verdict.reason
