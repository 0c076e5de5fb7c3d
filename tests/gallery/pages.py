"""The gallery pages as the tests read them: fenced blocks with the heading above each.

A page is Markdown under `docs/gallery/`. Its ```qvr block is the example
file, its ```mermaid block is what `qvr diagram` draws for that file, and its
```python blocks are the "Try it" code, each under a `###` heading that says
what it does (generating data, SVI, NUTS).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "gallery"
EXAMPLES = ROOT / "examples"

#: one page per model, each named after its example file
MODELS = (
    "vanilla_rnn_lm",
    "bidirectional_rnn_lm",
    "encoder_decoder",
    "rlstm_lm",
    "mogrifier_rlstm_lm",
    "bert_mlm",
    "transformer_seq2seq",
)

_FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, its text, the heading it sits under."""

    lang: str
    code: str
    heading: str
    line: int  # 1-based line of the opening fence

    @property
    def kind(self) -> str:
        """`data`, `svi` or `nuts` for a "Try it" block, from its heading."""
        h = self.heading.lower()
        if "nuts" in h:
            return "nuts"
        if "svi" in h:
            return "svi"
        if "data" in h:
            return "data"
        return "other"


def page_path(model: str) -> Path:
    return GALLERY / f"{model}.md"


def example_path(model: str) -> Path:
    return EXAMPLES / f"{model}.qvr"


def blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, in order. An unclosed fence is an error."""
    out: list[Block] = []
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _HEADING.match(lines[i])
        if m:
            heading = m.group(2)
        fence = _FENCE.match(lines[i])
        if fence and fence.group(1):
            start = i
            body: list[str] = []
            i += 1
            while i < len(lines) and lines[i].rstrip() != "```":
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise ValueError(f"line {start + 1}: the ```{fence.group(1)} block is not closed")
            code = "".join(f"{line}\n" for line in body)
            out.append(Block(fence.group(1), code, heading, start + 1))
        i += 1
    return out


def page_blocks(model: str, lang: str | None = None) -> list[Block]:
    found = blocks(page_path(model).read_text(encoding="utf-8"))
    return [b for b in found if lang is None or b.lang == lang]


def headings(text: str) -> list[str]:
    """The headings of a Markdown text outside fenced blocks, without their `#`s."""
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        m = _HEADING.match(line)
        if m and not in_fence:
            out.append(m.group(2))
    return out


def draw_mermaid(model: str) -> str:
    """What `qvr diagram examples/<model>.qvr --format mermaid` prints."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "qvr_cli",
            "diagram",
            str(example_path(model).relative_to(ROOT)),
            "--format",
            "mermaid",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"qvr diagram failed for {model} ({proc.returncode}): {proc.stderr}")
    return proc.stdout
