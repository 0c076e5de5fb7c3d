"""Scans on a `Padded` batch read each example within its length.

Each example of a padded batch must get what the same scan gives on that
example alone, cut to its real positions: the last real state, read right to
left from the last real position, and densities that ignore the padding.
"""

from __future__ import annotations

import pytest
import torch

from qvr_core.dsl import loads
from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import ProgramModule

SOURCE = """object Token : FinSet 12
object Embedded : Real 3
object Hidden : Real 4
morphism embed : Token -> Embedded [role=embed]
morphism cell : Embedded * Hidden -> Hidden [role=kernel, {cell}
program p : Token -> Hidden
    sample h <- embed >> {scan}
    return h
export p
"""
DETERMINISTIC = "param_source=linear] ~ Deterministic"
NORMAL = "scale=0.1] ~ Normal"
LENGTHS = [6, 4, 1]
SCANS = ["scan(cell)", "scan(cell, reverse=true)", "scanl(cell)", "scanl(cell, reverse=true)"]


def model(scan: str, cell: str) -> ProgramModule:
    torch.manual_seed(0)
    m = loads(SOURCE.format(scan=scan, cell=cell)).morphism
    assert isinstance(m, ProgramModule)
    return m


def tokens() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    t = torch.randint(0, 11, (3, 6), generator=g)
    for b, n in enumerate(LENGTHS):
        t[b, n:] = 11  # padding
    return t


def padded(t: torch.Tensor) -> Padded:
    return Padded(t, torch.tensor(LENGTHS))


@pytest.mark.parametrize("scan", SCANS)
def test_states_are_those_of_each_example_alone(scan: str) -> None:
    m, t = model(scan, DETERMINISTIC), tokens()
    together = m.run(padded(t)).values["h"]
    for b, n in enumerate(LENGTHS):
        alone = m.run(t[b : b + 1, :n]).values["h"][0]
        got = together[b, :n] if scan.startswith("scanl") else together[b]
        assert torch.allclose(got, alone, atol=1e-6), (scan, b)


@pytest.mark.parametrize("scan", SCANS)
def test_densities_ignore_the_padding(scan: str) -> None:
    m, t = model(scan, NORMAL), tokens()
    per_position = scan.startswith("scanl")
    shape = (3, 6, 4) if per_position else (3, 4)
    h = torch.randn(shape, generator=torch.Generator().manual_seed(2))
    together = m.run(padded(t), values={"h": h}).log_probs["h"]
    for b, n in enumerate(LENGTHS):
        value = h[b : b + 1, :n] if per_position else h[b : b + 1]
        alone = m.run(t[b : b + 1, :n], values={"h": value}).log_probs["h"]
        assert torch.allclose(together[b : b + 1], alone, atol=1e-5), (scan, b)


def test_a_padding_token_changes_nothing() -> None:
    m, t = model("scanl(cell, reverse=true)", DETERMINISTIC), tokens()
    before = m.run(padded(t)).values["h"]
    t[1, 5] = 3  # example 1 has 4 real positions
    after = m.run(padded(t)).values["h"]
    assert torch.equal(before[1, :4], after[1, :4])


def test_without_padding_a_reversed_scan_reads_from_the_last_position() -> None:
    m, t = model("scan(cell, reverse=true)", DETERMINISTIC), tokens()
    full = m.run(t).values["h"]
    flipped = model("scan(cell)", DETERMINISTIC).run(t.flip(1)).values["h"]
    assert torch.allclose(full, flipped, atol=1e-6)
