"""The `qvr` code blocks of quivers' guides, with how quivers compiles each.

quivers' guides (`docs/guides/*.md` in FACTSlab/quivers) write QVR in fenced ```qvr
blocks and say before a block, in an HTML comment, how its own doc tests compile it:
`<!-- compile: false -->` (a fragment, not compiled), `<!-- compile: cumulative -->`
(compiled after the guide's earlier cumulative blocks, joined) or `<!-- compile: qiec
-->`; an unmarked block is compiled alone. `bench/corpus.py --guides DIR` reads every
markdown file under DIR (a clone's `docs/guides`) with this module and counts the
constructs of the blocks quivers compiles and of the fragments apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})qvr[ \t]*$")
_MARKER = re.compile(r"<!--\s*compile:\s*(?P<mode>[\w-]+)\s*-->")
#: How many lines before a fence its marker may stand (blank lines between are usual).
_MARKER_REACH = 3


@dataclass(frozen=True)
class GuideBlock:
    """One block: where it is, how quivers compiles it, and the text qvr checks (for a
    cumulative block, the guide's cumulative blocks up to it, joined)."""

    guide: str
    index: int  # 1-based, among the guide's qvr blocks
    mode: str  # "alone", "false", "cumulative", "qiec"
    text: str

    @property
    def compiled(self) -> bool:
        """Whether quivers' doc tests compile it (every mode but `false`)."""
        return self.mode != "false"

    @property
    def name(self) -> str:
        return f"{self.guide}#{self.index}"


def guide_blocks(root: Path) -> list[GuideBlock]:
    """The qvr blocks of every markdown file under `root`, in path order."""
    found: list[GuideBlock] = []
    for path in sorted(root.rglob("*.md")):
        found += blocks_of(path.relative_to(root).as_posix(), path.read_text(encoding="utf-8"))
    return found


def blocks_of(guide: str, text: str) -> list[GuideBlock]:
    """The qvr blocks of one markdown text."""
    lines = text.splitlines()
    out: list[GuideBlock] = []
    cumulative: list[str] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if opened is None:
            i += 1
            continue
        indent, ticks = opened["indent"], opened["ticks"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^{re.escape(indent)}{ticks}`*\s*$", lines[j]):
            line = lines[j]
            body.append(line[len(indent) :] if line.startswith(indent) else line.lstrip())
            j += 1
        mode = _mode(lines[max(0, i - _MARKER_REACH) : i])
        code = "\n".join(body) + "\n"
        if mode == "cumulative":
            cumulative.append(code)
            code = "\n".join(cumulative)
        out.append(GuideBlock(guide, len(out) + 1, mode, code))
        i = j + 1
    return out


def _mode(before: list[str]) -> str:
    for line in reversed(before):
        marker = _MARKER.search(line)
        if marker is not None:
            return marker["mode"]
        if line.strip() and not line.strip().startswith("<!--"):
            break  # prose between: the marker, if any, is another block's
    return "alone"
