"""`over=` at run time: every draw of a step with `over=` has the shape the checker
states. For a number family the `over=` axes are further plates (`z : Item * L` is an
Item-by-L matrix, not a vector over Item), for a vector family the axis of one draw.

Over every model program of the shared corpus and the examples with such a step: the
compiled program is run forward and each of those sites is held to its checked type
(plates that have more than one entry, then one draw's axes).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from qvr_core.check import check
from qvr_core.check.model import Site
from qvr_core.check.module import CheckedModule
from qvr_core.plan.runnable import runnability
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model import compile_model
from tests.conformance.shared import corpus
from tests.runtime.one_model import InvalidDraws, synthetic_data
from tests.runtime.one_model import _forward as forward

ROOT = Path(__file__).resolve().parents[2]


def _sources() -> list[tuple[str, str]]:
    out = [(c.name, c.text()) for c in corpus()]
    out += [
        (str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("examples/**/*.qvr"))
    ]
    return [(where, text) for where, text in out if "over=" in text]


def _over_programs() -> list[tuple[str, str, str]]:
    found = []
    for where, text in _sources():
        checked = check(text)
        for name, model in checked.models.items():
            if any(s.over and s.kind != "marginalize" for s in model.sites):
                found.append((where, text, name))
    return found


PROGRAMS = _over_programs()


def _checked_shape(checked: CheckedModule, site: Site) -> tuple[int, ...]:
    assert site.type is not None
    sizes = {n: o.size for n, o in checked.objects.items()}
    plates = tuple(sizes[p.name] for p in site.type.plates if sizes[p.name] != 1)
    return plates + site.type.element.event


def test_it_covers_the_matrix_priors_of_the_gallery() -> None:
    if not corpus():
        pytest.skip("../shared/corpus not found (set QVR_SHARED)")
    wheres = {w.split("/")[-1].split("@")[0] for w, _, _ in PROGRAMS}
    assert {"factor_analysis", "pmf", "ppca", "bnn", "lda", "hmm"} <= wheres


@pytest.mark.parametrize(
    ("where", "text", "name"), PROGRAMS, ids=[f"{w}:{n}" for w, _, n in PROGRAMS]
)
def test_a_draw_with_over_has_the_checkers_shape(where: str, text: str, name: str) -> None:
    checked = check(text)
    verdict = runnability(checked, name)
    if not verdict.ok:
        assert verdict.reason  # refused with the checker's reason, never run on a guess
        return
    model = checked.models[name]
    program = compile_model(checked, name)
    try:
        run = forward(program, synthetic_data(checked, model))
    except InvalidDraws as e:  # the prior itself leaves a family's range: not the shapes
        pytest.skip(f"{where}: {e}")
    for site in model.sites:
        if not site.over or site.kind == "marginalize" or site.type is None:
            continue
        want = _checked_shape(checked, site)
        assert tuple(run.values[site.name].shape) == want, (site.name, site.type.label)
        assert program.site_event_shape(site.name) in (want, None)


def test_a_number_family_over_an_axis_draws_a_matrix() -> None:
    """The smallest case: `z : Item <- Normal(..) [over=L]` is Item by L, and an
    observation of it must be given so."""
    checked = check(
        "object Item : FinSet 4\nobject L : FinSet 2\n\n"
        "program p : Item -> Item\n"
        "    sample z : Item <- Normal(0.0, 1.0) [over=L]\n"
        "    observe y : Item <- Normal(z, 1.0) [over=L]\n"
        "    return y\n\nexport p\n"
    )
    assert checked.ok, [(d.code, d.message) for d in checked.diagnostics]
    z = next(s for s in checked.models["p"].sites if s.name == "z")
    assert z.type is not None and z.type.label == "Item * L -> R"
    program = compile_model(checked, "p")
    run = program.run({}, observations={"y": torch.zeros(4, 2)})
    assert tuple(run.values["z"].shape) == (4, 2)
    assert run.log_probs["y"].shape == (1,)
    with pytest.raises(
        QvrRuntimeError, match=r"has shape \(4,\) but the model gives it shape \(4, 2\)"
    ):
        program.run({}, observations={"y": torch.zeros(4)})
