"""docs/plots.md describes every kind `qvr plot` draws, and no other."""

from __future__ import annotations

import re

from qvr_core.posterior.figures import KINDS
from tests.conftest import ROOT


def test_each_kind_has_its_section() -> None:
    text = (ROOT / "docs" / "plots.md").read_text(encoding="utf-8")
    sections = re.findall(r"^### `([a-z-]+)`", text, flags=re.MULTILINE)
    assert sections == list(KINDS)
