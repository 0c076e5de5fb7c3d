"""Render README.md and every Markdown file under docs/ to HTML, QVR blocks highlighted.

Python-Markdown (`fenced_code`, `codehilite`) hands each ```qvr block to
Pygments, which finds `qvr.lexer.QvrLexer` by its entry point, so the pages show
QVR as Sphinx or MkDocs would. The pages keep the repository's layout under the
output folder (`README.html`, `docs/language.html`, ...), links between Markdown
files point at the rendered pages, and docs/'s images are copied beside them.

A ```qvr block that does not lex cleanly (a character that starts no QVR token)
is a problem: each prints as `FILE:LINE: ...` and the exit status is 1, so the
docs stay highlightable wherever they are read.

    .venv/bin/python scripts/build_docs.py [OUT]     # OUT defaults to docs/_build
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import markdown
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.token import Error

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DEFAULT_OUT = DOCS / "_build"
EXTENSIONS = ["fenced_code", "codehilite", "tables", "toc"]
EXTENSION_CONFIGS = {"codehilite": {"guess_lang": False}}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*\{?\.?(?P<lang>[\w+-]*)")
_MD_LINK = re.compile(r'(href="(?![a-z][a-z0-9+.-]*:|/|#)[^"#]*?)\.md(?=[#"])')
PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<link rel="stylesheet" href="{css}">
</head>
<body>
{body}
</body>
</html>
"""


def sources(out: Path) -> list[Path]:
    """README.md, then every Markdown file under docs/ (none under an output folder)."""
    return [ROOT / "README.md", *(p for p in sorted(DOCS.rglob("*.md")) if _source(p, out))]


def _source(path: Path, out: Path) -> bool:
    """Whether a file under docs/ is part of the docs, not of a build of them."""
    return "_build" not in path.relative_to(DOCS).parts and not path.is_relative_to(out.resolve())


def qvr_blocks(text: str) -> Iterator[tuple[int, str]]:
    """Each ```qvr block of a Markdown text: the line number of its first line, its text."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        i += 1
        if opening is None:
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        start, body = i, []
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][indent:] if not lines[i][:indent].strip() else lines[i])
            i += 1
        i += 1  # the closing fence
        if opening["lang"] == "qvr":
            yield start + 1, "\n".join(body)


def lex_problems(path: Path, text: str) -> list[str]:
    """One `FILE:LINE: ...` line per source line of a ```qvr block with characters that
    start no QVR token."""
    lexer = get_lexer_by_name("qvr")
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    problems = []
    for first, block in qvr_blocks(text):
        bad: dict[int, list[str]] = {}
        for offset, kind, value in lexer.get_tokens_unprocessed(block):
            if kind in Error:
                bad.setdefault(block.count("\n", 0, offset), []).append(value)
        for line, chars in sorted(bad.items()):
            listed = ", ".join(repr(c) for c in dict.fromkeys(chars))
            problems.append(
                f"{shown}:{first + line}: the qvr block does not lex: unexpected {listed}"
            )
    return problems


def render(path: Path, out: Path) -> Path:
    """Write the page of one Markdown file under `out`; its path there."""
    relative = path.relative_to(ROOT)
    target = (out / relative).with_suffix(".html")
    text = path.read_text(encoding="utf-8")
    body = markdown.markdown(text, extensions=EXTENSIONS, extension_configs=EXTENSION_CONFIGS)
    body = _MD_LINK.sub(r"\1.html", body)
    heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
    title = heading.group(1).strip() if heading else relative.stem
    css = Path("../" * (len(relative.parts) - 1)) / "pygments.css"
    target.parent.mkdir(parents=True, exist_ok=True)
    page = PAGE.format(title=html.escape(title), css=css.as_posix(), body=body)
    target.write_text(page, encoding="utf-8")
    return target


def build(out: Path) -> list[str]:
    """Render every page into `out`; the lexing problems found on the way."""
    out.mkdir(parents=True, exist_ok=True)
    style = HtmlFormatter().get_style_defs(".codehilite")
    (out / "pygments.css").write_text(style + "\n", encoding="utf-8")
    problems = []
    for path in sources(out):
        problems.extend(lex_problems(path, path.read_text(encoding="utf-8")))
        render(path, out)
    for asset in sorted(DOCS.rglob("*")):
        if asset.is_file() and asset.suffix != ".md" and _source(asset, out):
            copy = out / "docs" / asset.relative_to(DOCS)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(asset, copy)
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "out", nargs="?", type=Path, default=DEFAULT_OUT, help="default docs/_build"
    )
    args = parser.parse_args(argv)
    problems = build(args.out)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    print(f"wrote {len(sources(args.out))} pages to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
