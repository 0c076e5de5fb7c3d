"""The gallery pages of the model examples show their files as they are, and their
`qvr run` commands run (here with a few steps each)."""

from __future__ import annotations

import re
import shlex

import pytest

from qvr_core.runs.run import run_inference
from tests.gallery.pages import GALLERY, ROOT, page_blocks

MODELS = ROOT / "examples" / "models"
PAGES = ("eight_schools", "linear_regression", "hierarchical_logistic", "gaussian_mixture", "hmm")


def test_every_model_example_is_shown_on_a_page_and_listed() -> None:
    shown = {block.code for page in PAGES for block in page_blocks(page) if block.lang == "qvr"}
    files = {p.read_text(encoding="utf-8") for p in MODELS.glob("*.qvr")}
    assert shown == files  # each block is a file byte for byte, and each file is on a page
    index = (GALLERY / "README.md").read_text(encoding="utf-8")
    for page in PAGES:
        assert f"]({page}.md)" in index


def commands() -> list[tuple[str, list[str]]]:
    out = []
    for page in PAGES:
        for block in page_blocks(page):
            if block.lang == "sh":
                out += [(page, shlex.split(line)) for line in block.code.splitlines() if line]
    return out


@pytest.mark.parametrize("page,argv", commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_pages_commands_run(page: str, argv: list[str]) -> None:
    assert argv[:2] == ["qvr", "run"]
    opts = dict(zip(argv[3::2], argv[4::2], strict=True))
    source = (ROOT / argv[2]).read_text(encoding="utf-8")
    summary = run_inference(
        source,
        method=opts["--method"],
        steps=6,
        lr=float(opts.get("--lr", "0.01")),
        data=ROOT / opts["--data"],
        max_tree_depth=3,
    )
    assert summary["steps"] == 6 * summary.get("chains", 1)
    # what the page says it printed has a row for each site the program has
    shown = (GALLERY / f"{page}.md").read_text(encoding="utf-8")
    for site in (summary.get("posterior") or {}).get("sites", {}):
        assert re.search(rf"^  {re.escape(site)}(\[[0, ]+\])? ", shown, re.M), site
