"""A step option written as a flag means what quivers 0.25.2 computes for it.

Read from quivers' compiler (the 0.25.2 wheel): `dsl/compiler/programs.py` checks each
step's option keys against the set its kind reads before anything else, refusing any
other key (`check_option_keys`, "unknown option"):

    sample       over, iid_over
    observe      via, over, iid_over
    marginalize  over, reduction

and `dsl/parser/program_steps.py` then decodes only values: `over=`/`iid_over=` from a
name or a list of names, `via=` from a name or a list, `reduction=` from a name. A flag
(`[over]`, quivers' `OptionFlag`) passes the key check and decodes to nothing, so the step
is the step without the option: no axes, no row map, and the default `logsumexp`
reduction (`step.reduction or "logsumexp"`), the exact sum. The guides' programs below
(the axis-role clause of `dsl-programs-and-lets.md`, the grouped mixture of
`programs-hierarchical.md`) are therefore written with each flag quivers accepts and
compared with the same program without it: the resolved model's sites, the three
exports' text and the compiled log joint must be the plain program's. A key quivers does
not read on that kind of step is an error, as quivers' compile error is.

qvr's own difference: `iid_over` on a `marginalize`, valued or not, is accepted (quivers
refuses the key there); its flag is dropped with the same warning as any other.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, export_program
from qvr_core.runtime.model import compile_model
from qvr_core.text import rules
from tests.conformance import oracle

#: The option keys quivers 0.25.2's compiler reads on each kind of step.
QUIVERS_STEP_KEYS = {
    "sample": ("over", "iid_over"),
    "observe": ("via", "over", "iid_over"),
    "marginalize": ("over", "reduction"),
}

#: One program per kind of step, `{flag}` where the flag goes on that step.
#: A latent with its noise scale, observed on a plate of three rows.
LATENT = """object Row : FinSet 3

program regression : Row -> Row
    sample mu <- Normal(0.0, 1.0){sample}
    sample sigma <- HalfNormal(1.0)
    observe y : Row <- Normal(mu, sigma){observe}
    return mu

export regression
"""

#: The guide's grouped marginalization: one class per row, summed out per row.
GROUPED = """object Class : FinSet 2
object Row : FinSet 4

program mixture : Row -> Row
    sample w <- Dirichlet(1.0) [over=Class]
    sample mu : Class <- Normal(0.0, 2.0)
    marginalize c : Class <- Categorical(w) [over=Row{marginalize}]
        observe y : Row <- Normal(mu[c], 1.0){observe}
    return mu

export mixture
"""

#: One class for all rows: the ungrouped marginalize that `[over]` leaves.
UNGROUPED = """object Class : FinSet 2
object Row : FinSet 4

program mixture : Row -> Row
    sample w <- Dirichlet(1.0) [over=Class]
    sample mu : Class <- Normal(0.0, 2.0)
    marginalize c : Class <- Categorical(w){marginalize}
        observe y : Row <- Normal(mu[c], 1.0)
    return mu

export mixture
"""

F64 = torch.float64
VALUES = {
    LATENT: {
        "mu": torch.tensor(0.3, dtype=F64),
        "sigma": torch.tensor(1.4, dtype=F64),
        "y": torch.tensor([0.4, -1.1, 2.0], dtype=F64),
    },
    GROUPED: {
        "w": torch.tensor([0.3, 0.7], dtype=F64),
        "mu": torch.tensor([-1.0, 2.0], dtype=F64),
        "y": torch.tensor([0.3, 2.2, -0.4, 1.9], dtype=F64),
    },
}
VALUES[UNGROUPED] = VALUES[GROUPED]

#: (template, step kind, key, the flag as written in the template's slot)
ACCEPTED = [
    (LATENT, "sample", "over", " [over]"),
    (LATENT, "sample", "iid_over", " [iid_over]"),
    (LATENT, "observe", "via", " [via]"),
    (LATENT, "observe", "over", " [over]"),
    (LATENT, "observe", "iid_over", " [iid_over]"),
    (GROUPED, "observe", "via", " [via]"),
    (GROUPED, "marginalize", "reduction", ", reduction"),
    (UNGROUPED, "marginalize", "over", " [over]"),
    (UNGROUPED, "marginalize", "reduction", " [reduction]"),
]
SLOTS = ("sample", "observe", "marginalize")


def _text(template: str, kind: str = "", flag: str = "") -> str:
    slots = {s: "" for s in SLOTS}
    if kind:
        slots[kind] = flag
    return template.format(**slots)


def _sites(module: CheckedModule) -> list[tuple[object, ...]]:
    """What the resolved model says of each site, but where its text is."""
    (model,) = module.models.values()
    return [
        (s.name, s.kind, s.family, s.plates, s.over, s.via, s.reduction, s.scope, s.type)
        for s in model.sites
    ]


def test_the_table_is_what_qvr_reads_on_each_kind_of_step() -> None:
    """Every key quivers reads on a step is one qvr reads there (its own `constraint`
    beside them)."""
    assert {(kind, key) for _, kind, key, _ in ACCEPTED} == {
        (kind, key) for kind, keys in QUIVERS_STEP_KEYS.items() for key in keys
    }


@pytest.mark.parametrize(
    ("template", "kind", "key", "flag"), ACCEPTED, ids=[f"{k}-{key}" for _, k, key, _ in ACCEPTED]
)
def test_quivers_grammars_parse_the_flag(template: str, kind: str, key: str, flag: str) -> None:
    oracle.require_head(_text(template, kind, flag))


@pytest.mark.parametrize(
    ("template", "kind", "key", "flag"), ACCEPTED, ids=[f"{k}-{key}" for _, k, key, _ in ACCEPTED]
)
def test_a_flag_quivers_accepts_is_the_step_without_it(
    template: str, kind: str, key: str, flag: str
) -> None:
    flagged, plain = check(_text(template, kind, flag)), check(_text(template))
    assert [d.code for d in plain.diagnostics] == []
    assert [d.code for d in flagged.diagnostics] == [rules.OPTION_WITHOUT_VALUE.code]
    assert _sites(flagged) == _sites(plain)
    (name,) = plain.models
    for target in TARGETS.values():
        written = export_program(flagged, target, name)
        assert written.diagnostics == ()
        assert written.text == export_program(plain, target, name).text, target.name
    values = VALUES[template]
    got = compile_model(flagged, name).log_joint({}, values)
    torch.testing.assert_close(got, compile_model(plain, name).log_joint({}, values))


def test_a_reduction_flag_is_quivers_default_the_exact_sum() -> None:
    flagged = check(_text(UNGROUPED, "marginalize", " [reduction]"))
    written = check(_text(UNGROUPED, "marginalize", " [reduction=logsumexp]"))
    for module in (flagged, written):
        site = next(s for s in module.models["mixture"].sites if s.kind == "marginalize")
        assert site.sums_exactly
    values = VALUES[UNGROUPED]
    got = compile_model(flagged, "mixture").log_joint({}, values)
    torch.testing.assert_close(got, compile_model(written, "mixture").log_joint({}, values))


@pytest.mark.parametrize(
    ("template", "kind", "flag"),
    [
        (LATENT, "sample", " [via]"),
        (LATENT, "sample", " [reduction]"),
        (LATENT, "observe", " [reduction]"),
        (GROUPED, "marginalize", ", via"),
        (LATENT, "sample", " [overr]"),
    ],
)
def test_a_key_quivers_does_not_read_there_is_an_error(template: str, kind: str, flag: str) -> None:
    module = check(_text(template, kind, flag))
    assert [d.code for d in module.diagnostics if d.is_error] in (
        [rules.OPTION_NOT_APPLICABLE.code],
        [rules.UNKNOWN_OPTION.code],
    )
