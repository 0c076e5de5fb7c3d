"""The gallery pages stay true to the examples they show.

- every model has a page with the sections a reader expects;
- the page's ```qvr block is the example file, byte for byte;
- the page's ```mermaid block is what `qvr diagram --format mermaid` draws
  now (a stale diagram fails; `python -m tests.gallery.regenerate` fixes it),
  and Mermaid's own parser accepts it;
- every example checks clean.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from qvr_core.check import check
from qvr_core.text.diagnostics import Severity
from tests.gallery.pages import (
    EXAMPLES,
    MODELS,
    ROOT,
    draw_mermaid,
    example_path,
    headings,
    page_blocks,
    page_path,
)
from tests.graph.conftest import mermaid_parse  # noqa: F401  (the fixture)

REGENERATE = "run `.venv/bin/python -m tests.gallery.regenerate` and review the diff"

#: the sections every page has, in this order
SECTIONS = ("Overview", "QVR source", "Walkthrough", "Diagram", "Try it")

#: the diagnostics an example may carry: the seed's match by dimension is
#: deliberate (its page explains it); everything else checks without a word
ALLOWED = {
    "bidirectional_rnn_lm": ["QVR203"],
}

parametrize_models = pytest.mark.parametrize("model", MODELS)


@parametrize_models
def test_page_exists_with_its_sections(model: str) -> None:
    path = page_path(model)
    assert path.exists(), f"{path} is missing"
    found = headings(path.read_text(encoding="utf-8"))
    positions = []
    for section in SECTIONS:
        assert section in found, f"{path.name} has no '{section}' section: {found}"
        positions.append(found.index(section))
    assert positions == sorted(positions), f"{path.name}: sections out of order: {found}"


@parametrize_models
def test_qvr_block_is_the_example(model: str) -> None:
    blocks = page_blocks(model, "qvr")
    assert len(blocks) == 1, f"{model}: expected one ```qvr block, found {len(blocks)}"
    expected = example_path(model).read_text(encoding="utf-8")
    assert blocks[0].code == expected, (
        f"{model}: the ```qvr block differs from the example; {REGENERATE}"
    )


@parametrize_models
def test_mermaid_block_is_current(model: str) -> None:
    blocks = page_blocks(model, "mermaid")
    assert len(blocks) == 1, f"{model}: expected one ```mermaid block, found {len(blocks)}"
    assert blocks[0].code == draw_mermaid(model), f"{model}: the diagram is stale; {REGENERATE}"


def test_mermaid_blocks_parse(mermaid_parse) -> None:  # noqa: F811
    texts = {model: page_blocks(model, "mermaid")[0].code for model in MODELS}
    parsed = mermaid_parse(texts)
    for model in MODELS:
        result = parsed[model]
        assert result["ok"], f"{model}: mermaid rejects the diagram: {result['error']}"
        assert result["type"].startswith("flowchart")
        assert result["edges"], f"{model}: the diagram has no edges"


@parametrize_models
def test_example_checks_clean(model: str) -> None:
    module = check(example_path(model).read_text(encoding="utf-8"))
    codes = [d.code for d in module.diagnostics]
    assert codes == ALLOWED.get(model, []), [f"{d.code} {d.message}" for d in module.diagnostics]
    assert not any(d.severity in (Severity.ERROR, Severity.WARNING) for d in module.diagnostics)


def test_every_example_checks_clean_on_the_command_line() -> None:
    files = sorted(str(p.relative_to(ROOT)) for p in EXAMPLES.glob("*.qvr"))
    assert {f"examples/{m}.qvr" for m in MODELS} <= set(files)
    proc = subprocess.run(
        [sys.executable, "-m", "qvr_cli", "check", *files],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error[" not in proc.stdout and "warning[" not in proc.stdout, proc.stdout


@parametrize_models
def test_limits_cite_sections_of_future_work(model: str) -> None:
    # A page's closing "What ..." section names the future-work sections it
    # relies on in quotes; each must be a heading of docs/future_work.md.
    future = headings((ROOT / "docs" / "future_work.md").read_text(encoding="utf-8"))
    text = page_path(model).read_text(encoding="utf-8")
    limits = re.search(r"^## What [^\n]*\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert limits, f"{model}: no closing 'What ...' section on limits"
    cited = re.findall(r'"([A-Z][^"]+)"', limits.group(1).replace("\n  ", " "))
    assert cited, f"{model}: the limits section cites no section of docs/future_work.md"
    for name in cited:
        assert any(name in h for h in future), f"{model}: no future-work section '{name}'"


def test_the_gallery_index_links_every_page() -> None:
    index = (page_path("vanilla_rnn_lm").parent / "README.md").read_text(encoding="utf-8")
    for model in MODELS:
        assert f"]({model}.md)" in index, f"docs/gallery/README.md does not link {model}.md"
