"""Bring the gallery pages' generated blocks up to date.

    .venv/bin/python -m tests.gallery.regenerate

rewrites, in every page of `docs/gallery/`, the ```qvr block with the example
file and the ```mermaid block with what `qvr diagram --format mermaid` draws
for it. Review the diff afterwards: the walkthrough may need to follow.
"""

from __future__ import annotations

import sys

from tests.gallery.pages import MODELS, blocks, draw_mermaid, example_path, page_path


def regenerate(model: str) -> bool:
    """Rewrite one page's qvr and mermaid blocks; True when the page changed."""
    path = page_path(model)
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    fresh = {
        "qvr": example_path(model).read_text(encoding="utf-8"),
        "mermaid": draw_mermaid(model),
    }
    # Replace from the last block up, so earlier line numbers stay valid.
    for block in reversed(blocks(text)):
        if block.lang not in fresh:
            continue
        body = fresh[block.lang]
        if not body.endswith("\n"):
            body += "\n"
        start = block.line  # first line after the opening fence (0-based index)
        end = start + len(block.code.splitlines())
        lines[start:end] = [body]
    new = "".join(lines)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def main() -> int:
    for model in MODELS:
        changed = regenerate(model)
        print(f"{page_path(model)}: {'updated' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
