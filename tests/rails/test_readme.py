"""The README is read in five minutes (issue 51) and every link of it and of docs/ leads
somewhere: a relative link names a file of the repository, and its `#anchor` one of
that page's headings (as GitHub makes them)."""

from __future__ import annotations

import re
from pathlib import Path

from qvr_core.check import check
from tests.conftest import ROOT

README = ROOT / "README.md"
PAGES = [README, ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces
    as dashes, outside code blocks."""
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text(encoding="utf-8"))
    out = set()
    for title in re.findall(r"(?m)^#+ (.+)$", text):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower().replace("`", ""))
        out.add(slug.replace(" ", "-"))
    return out


def _links(page: Path) -> list[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`]*`", "", text)  # inline code, over a line break too: no link
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_readme_is_short_and_shows_a_program_that_checks() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode()) < 15_000
    (program,) = re.findall(r"(?ms)^```qvr\n(.*?)^```", text)
    assert not [d.message for d in check(program).diagnostics if d.is_error]
    assert "```mermaid" in text and "./dev test" in text and "./dev demo" in text


def test_every_relative_link_leads_to_a_file_and_a_heading() -> None:
    broken = []
    for page in PAGES:
        for target in _links(page):
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []
