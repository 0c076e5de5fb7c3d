"""Every exported model scores what qvr scores (issue 48's agreement, through the targets).

For each model program of the agreement set (tests/resolved_models.py: the examples,
the posteriordb programs, the test models and the shared corpus) that a target writes,
on its data as a JSON data file gives it (posteriordb's own for its programs, else what
`qvr data` draws, seed 0), the exported program's log density at the point a qvr NUTS
chain starts from is qvr's log joint there: families, lets, gathers, marginalized and
summed-out scopes, templates, one-entry plates. Programs whose exports are the same
text are scored once.

NumPyro and PyMC are scored here; a Stan program takes about a minute to compile, so
Stan is held to qvr's log joint on the programs tests/export/test_stan.py compiles.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.posteriordb import DEFAULT_DB as DB
from bench.posteriordb import EXPRESSIBLE as POSTERIORDB
from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, Target, export_program, exportable_programs
from qvr_core.inference.errors import InferenceError
from qvr_core.runs.synthesise import synthesise
from tests.conformance.shared import corpus
from tests.export.qvr_start import Start, qvr_start
from tests.resolved_models import runnable_models

#: What a target's score takes: the exported text, the data, qvr's start point.
Score = Callable[[str, dict[str, Any], Start], float]


def _cases(target: Target) -> Iterator[tuple[str, CheckedModule, str, str, dict[str, Any]]]:
    """(where, module, program, exported text, data) of each distinct export to `target`.
    A program qvr cannot draw data for (a flat prior, data out of a family's support) is
    scored on its real data when it is a posteriordb program, else left out."""
    seen: set[str] = set()
    for name, program, text in runnable_models():
        module = check(text)
        if program not in exportable_programs(module):
            continue
        written = export_program(module, target, program, source=name).text
        if written is None or written in seen:
            continue
        seen.add(written)
        data = _data(name, module, program)
        if data is not None:
            yield f"{name}::{program}", module, program, written, data


def _data(name: str, module: CheckedModule, program: str) -> dict[str, Any] | None:
    """The program's data as a JSON data file gives it: posteriordb's own, else drawn."""
    stem = Path(name).stem
    folder = DB / stem
    if name.startswith("examples/posteriordb/") and stem in POSTERIORDB and folder.is_dir():
        real = json.loads((folder / "data.json").read_text(encoding="utf-8"))
        return json.loads(json.dumps(POSTERIORDB[stem].data(real)))
    try:
        arrays = synthesise(module, program, seed=0).arrays()
    except InferenceError:
        return None
    return json.loads(json.dumps({k: v.tolist() for k, v in arrays.items()}))


def _scores_all(target: Target, score: Score, *, summed: bool) -> None:
    """Every case scores as qvr does; the examples and test models give some 20 cases,
    the corpus 75 more."""
    scored = 0
    for where, module, program, written, data in _cases(target):
        start = qvr_start(module, program, data, summed=summed)
        assert score(written, data, start) == pytest.approx(start.log_joint, rel=1e-6), where
        scored += 1
    assert scored >= (90 if corpus() else 15), scored


@pytest.mark.usefixtures("jax_float64")
def test_every_numpyro_export_scores_as_qvr(tmp_path: Path) -> None:
    pytest.importorskip("numpyro")
    pytest.importorskip("funsor")
    import jax
    from numpyro.contrib.funsor import enum
    from numpyro.contrib.funsor import log_density as enumerated_log_density
    from numpyro.infer.util import log_density

    from tests.export.test_numpyro import load, plate_nesting

    def score(written: str, data: dict[str, Any], start: Start) -> float:
        path = tmp_path / "data.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        namespace = load(written)
        model = namespace["model"]
        kwargs = namespace["load_data"](str(path))
        point = {k: jax.numpy.asarray(v) for k, v in start.point.items()}
        if 'infer={"enumerate": "parallel"}' not in written:
            return float(log_density(model, (), kwargs, point)[0])
        nesting = plate_nesting(model, kwargs, point)
        enumerated = enum(model, first_available_dim=-1 - nesting)
        density = jax.jit(lambda p: enumerated_log_density(enumerated, (), kwargs, p)[0])
        return float(density(point))

    _scores_all(TARGETS["numpyro"], score, summed=True)


def test_every_pymc_export_scores_as_qvr() -> None:
    """PyMC's log density without Jacobian (constrained values, moved by each variable's
    transform as NUTS moves them); a discrete latent stays a PyMC variable at its value."""
    pytest.importorskip("pymc")
    from tests.export.pymc_points import value_point
    from tests.export.test_pymc import PYTHON, load

    def score(written: str, data: dict[str, Any], start: Start) -> float:
        model = load(written)["build_model"](**data)
        logp = model.compile_logp(jacobian=False, mode=PYTHON)
        return float(logp(value_point(model, start.point)))

    _scores_all(TARGETS["pymc"], score, summed=False)
