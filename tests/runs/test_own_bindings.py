"""Names a program binds itself (a call step's target, a `factor` comprehension's or a
lambda's variables) are never its data: a run refuses such a program once, before it
reads data, at the construct's line. (A deduction a program parses is typed:
tests/conformance/test_deduction_runs.py.)

(The call step calls a `define` the checker leaves names-only, a tuple value: a call of
one it types runs, tests/runtime/test_call_steps.py. The `factor` program is names-only
for its method `.first()`: a program whose factor is typed runs,
tests/runtime/test_factor_expressions.py.)"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.inference.errors import InferenceError
from qvr_core.plan.runnable import own_binding, runnability
from qvr_core.runs.run import run_program
from qvr_core.syntax import ast

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

CALL_STEP = """\
object Obs : FinSet 4

define shift(x : Real, k : Real) : Real !{} =
    let pair = (x, k)
    return pair[0] + pair[1]

program prog : Obs -> Obs
    sample a <- Normal(0.0, 1.0)
    let b <- shift(a, 2.0)
    observe y : Obs <- Normal(b, 0.5)
    return b

export prog
"""

FACTOR = """\
object Class : FinSet 4
object Resp : FinSet 3

program prog : Resp -> Resp
    sample mu : Class <- Normal(0.0, 1.0)
    let s = factor c : Class in mu[c] + 1.0
    let s0 = s.first()
    observe y : Resp <- Normal(s0, 0.5)
    return mu

export prog
"""

LAMBDA = """\
object Resp : FinSet 3

program prog : Resp -> Resp
    sample mu <- Normal(0.0, 1.0)
    let f = z -> z + mu
    let m = f(1.0)
    observe y : Resp <- Normal(m, 0.5)
    return mu

export prog
"""

CASES = {
    "call step": (CALL_STEP, "line 9, the call step that binds 'b'", ["b"]),
    "factor": (FACTOR, "line 6, the `factor` comprehension over 'c'", ["c"]),
    "lambda": (LAMBDA, "line 5, the lambda of 'z'", ["z"]),
}


@pytest.mark.parametrize("case", CASES)
def test_the_refusal_names_the_construct_s_line(case: str) -> None:
    source, where, _ = CASES[case]
    verdict = runnability(check(source), "prog")
    assert not verdict.ok and verdict.reason is not None
    assert "(QVR011): " + where + ";" in verdict.reason


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("method", ["prior", "nuts", "svi"])
def test_a_run_refuses_before_it_asks_for_data(case: str, method: str) -> None:
    source, where, _ = CASES[case]
    with pytest.raises(InferenceError) as info:
        run_program(source, method=method, steps=2, chains=1)
    message = str(info.value)
    assert where in message and "data" not in message  # no data name asked for
    assert "\n" not in message


@pytest.mark.parametrize("case", CASES)
def test_a_data_file_holding_the_bound_names_gets_the_same_refusal(
    case: str, tmp_path: Path
) -> None:
    source, where, bound = CASES[case]
    data = tmp_path / "data.json"
    data.write_text(json.dumps({**{n: 1.0 for n in bound}, "y": [0.1, 0.2, 0.3]}))
    with pytest.raises(InferenceError) as info:
        run_program(source, method="prior", steps=2, data=str(data))
    assert where in str(info.value) and "unexpected" not in str(info.value)


def test_a_program_without_such_a_construct_has_none() -> None:
    checked = check(CALL_STEP.replace("    let b <- shift(a, 2.0)\n", "    let b = a + 2.0\n"))
    decl = next(d for d in checked.ast.decls if isinstance(d, ast.ProgramDecl))
    assert own_binding(checked, decl) is None


def _binders(decl: ast.ProgramDecl) -> set[str]:
    """The names a program binds for itself: call-step targets, comprehension and lambda
    variables."""
    out: set[str] = set()
    stack: list[object] = [decl.steps]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(item)
        elif isinstance(item, ast.CallStep):
            out.add(item.target.text)
        elif isinstance(item, ast.Factor):
            out.update(n.text for n, _ in item.binders)
        elif isinstance(item, ast.Lambda):
            out.add(item.param.text)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
    return out


def test_no_corpus_program_reads_a_name_it_binds_or_a_declaration_as_data() -> None:
    files = sorted(CORPUS.glob("*/*.qvr"))
    if not files:
        pytest.skip(f"the corpus is not at {CORPUS}")
    seen = 0
    for path in files:
        checked = check(path.read_text(encoding="utf-8"))
        declared = {
            n.text
            for d in checked.ast.decls
            if not isinstance(d, ast.ExportDecl | ast.ProgramDecl)
            for n in getattr(d, "names", ()) or (d.name,)
        }
        for decl in checked.ast.decls:
            if not isinstance(decl, ast.ProgramDecl):
                continue
            model = checked.models.get(decl.name.text)
            bound = _binders(decl)
            if model is None:  # names only: refused before any data, at the construct
                verdict = runnability(checked, decl.name.text)
                assert not bound or not verdict.ok, path.name
                continue
            seen += 1
            data = {d.name for d in model.data if not d.observed}
            assert not data & (bound | declared), (path.name, decl.name.text, data)
    assert seen > 50  # the corpus's typed models were all looked at
