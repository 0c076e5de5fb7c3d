"""An index in a let's expression means what quivers 0.25.2 computes for it.

Read from quivers' compiler (the 0.25.2 wheel, `dsl/compiler/programs.py`,
`_compile_let_expr`): a let expression `arr[i, ...]` evaluates the array and each index
and returns `arr[long_idx]`, each index's value converted to a whole number (`.to(long)`)
and used as torch indexes: counted from 0 along the leading axes. A let bound to a number
(`let i = 2`; program steps keep every number as a real, `Let(name, value)`) therefore
indexes as that number does: `mu[i]` is `mu[2]`, the third entry, and a name bound to such
a let (`let j = i`) too. The guide (`dsl-programs-and-lets.md`, "Indexed gather in
`let`") writes the gather by a plate variable; these are the same gather by a number.

qvr keeps its rule for a number as an index (QVR409 for one that is negative, not whole
as written, or out of range: quivers' torch indexing would count a negative from the
end), so only the indices that rule admits are compared: the resolved model, the
compiled log joint and the exports' text against the program that writes the number.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.check import check
from qvr_core.export import TARGETS, export_program
from qvr_core.runtime.model import compile_model
from tests.conformance import oracle

#: A latent over K, one entry of it the mean of five observed rows.
TEMPLATE = """object K : FinSet 3
object Row : FinSet 5

program pick : Row -> Row
    sample mu : K <- Normal(0.0, 1.0)
{lets}    observe y : Row <- Normal(a, 1.0)
    return mu

export pick
"""

F64 = torch.float64
MU = torch.tensor([0.1, -0.7, 1.3], dtype=F64)
Y = torch.tensor([0.5, 1.0, 1.5, 0.2, -0.1], dtype=F64)

#: (the lets indexing by a bound name, the entries `a` adds up, the lets writing them)
CASES = [
    ("    let i = 2\n    let a = mu[i]\n", (2,), "    let a = mu[2]\n"),
    ("    let i = 0\n    let j = i\n    let a = mu[j]\n", (0,), "    let a = mu[0]\n"),
    ("    let i = 1\n    let a = mu[i] + mu[0]\n", (1, 0), "    let a = mu[1] + mu[0]\n"),
]


def _text(lets: str) -> str:
    return TEMPLATE.format(lets=lets)


@pytest.mark.parametrize(("bound", "entries", "written"), CASES)
def test_quivers_grammars_parse_it(bound: str, entries: tuple[int, ...], written: str) -> None:
    oracle.require_head(_text(bound))


@pytest.mark.parametrize(("bound", "entries", "written"), CASES)
def test_a_bound_index_reads_the_entry_its_number_names(
    bound: str, entries: tuple[int, ...], written: str
) -> None:
    module, plain = check(_text(bound)), check(_text(written))
    assert module.diagnostics == () and plain.diagnostics == ()
    values = {"mu": MU, "y": Y}
    got = compile_model(module, "pick").log_joint({}, values)
    mean = sum(MU[e] for e in entries)
    want = (
        torch.distributions.Normal(0.0, 1.0).log_prob(MU).sum()
        + torch.distributions.Normal(mean, 1.0).log_prob(Y).sum()
    )
    torch.testing.assert_close(got.reshape(()), want)
    torch.testing.assert_close(got, compile_model(plain, "pick").log_joint({}, values))


@pytest.mark.parametrize(("bound", "entries", "written"), CASES)
def test_the_exports_write_the_entry(bound: str, entries: tuple[int, ...], written: str) -> None:
    """Each target writes the gather as the written number's (Stan's counted from 1)."""
    module, plain = check(_text(bound)), check(_text(written))
    for target in TARGETS.values():
        got = export_program(module, target, "pick")
        want = export_program(plain, target, "pick")
        assert got.diagnostics == () and got.text is not None and want.text is not None
        first = entries[0] + (target.name == "stan")  # Stan counts from 1
        line = next(x for x in want.text.splitlines() if f"mu[{first}]" in x)
        assert line.strip() in got.text, (target.name, line)
