"""Write what the tree-sitter grammar of QVR takes from qvr's registries, and the query
copies of the editors that read other capture names.

- `editors/tree-sitter-qvr/grammar.js`: the object constructors (`builtin_type`), from
  `qvr_core.builtins.objects` (the lexer's CTOR words).
- `editors/tree-sitter-qvr/queries/highlights.scm`: the `#any-of?` list of the arithmetic
  builtins and combinators, from `qvr_core.builtins` (FUNCTIONS, COMBINATORS).
- Helix's copies (`helix/queries/qvr/`): highlights with the blocks in reverse order
  (Helix lets the first matching pattern win, Neovim and Zed the last) and Helix's
  capture names; locals and injections with Helix's names.
- Zed's copies (`zed/languages/qvr/`): highlights and injections with Zed's names.

Each list sits between BEGIN and END marker lines, which this script rewrites and leaves
everything else as it is; the copies are rewritten whole. `--check` writes nothing and
exits 1 when a file is stale (`tests/tree_sitter/test_generated.py` runs it). After a
change to grammar.js, regenerate `src/` too (editors/tree-sitter-qvr/README.md).

    .venv/bin/python scripts/gen_tree_sitter.py [--check]
"""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from qvr_core.builtins import COMBINATORS, FUNCTIONS  # noqa: E402
from qvr_core.builtins.functions import LIFTED  # noqa: E402
from qvr_core.builtins.objects import OBJECT_CONSTRUCTORS, UNTYPED_CONSTRUCTORS  # noqa: E402

GRAMMAR_DIR = ROOT / "editors" / "tree-sitter-qvr"
GRAMMAR = GRAMMAR_DIR / "grammar.js"
QUERIES = GRAMMAR_DIR / "queries"
HELIX_QUERIES = GRAMMAR_DIR / "helix" / "queries" / "qvr"
ZED_QUERIES = GRAMMAR_DIR / "zed" / "languages" / "qvr"
WIDTH = 100

#: nvim-treesitter's capture names (the canonical queries) -> Helix's
HELIX_NAMES = {
    "number": "constant.numeric.integer",
    "number.float": "constant.numeric.float",
    "boolean": "constant.builtin.boolean",
    "comment.documentation": "comment.line.documentation",
    "property": "variable.other.member",
    "keyword.return": "keyword.control.return",
    "keyword.conditional": "keyword.control.conditional",
    "function.call": "function",
    "function.method.call": "function.method",
    "type.definition": "type",
    "local.definition.type": "local.definition",
    "local.definition.function": "local.definition",
    "local.definition.parameter": "local.definition",
    "local.definition.var": "local.definition",
}
#: nvim-treesitter's capture names -> Zed's (Zed falls back along the dots itself)
ZED_NAMES = {"comment.documentation": "comment.doc"}


def constructors() -> list[str]:
    return [*OBJECT_CONSTRUCTORS, *UNTYPED_CONSTRUCTORS]


def builtin_functions() -> list[str]:
    return [*FUNCTIONS, *LIFTED, *COMBINATORS]


def between(text: str, begin: str, end: str, lines: Iterable[str]) -> str:
    """`text` with the lines strictly between the line holding `begin` and the line
    holding `end` replaced by `lines`."""
    pattern = re.compile(
        rf"(^[^\n]*{re.escape(begin)}[^\n]*\n)(.*?)(^[^\n]*{re.escape(end)})",
        re.MULTILINE | re.DOTALL,
    )
    match = pattern.search(text)
    if match is None:
        raise SystemExit(f"markers {begin!r} .. {end!r} not found")
    body = "".join(f"{line}\n" for line in lines)
    return text[: match.start(2)] + body + text[match.end(2) :]


def grammar_js(text: str) -> str:
    lines = ["const OBJECT_CONSTRUCTORS = [", *(f"  '{name}'," for name in constructors()), "];"]
    return between(text, "BEGIN object constructors", "END object constructors", lines)


def highlights(text: str) -> str:
    names = " ".join(f'"{name}"' for name in builtin_functions())
    wrapped = textwrap.wrap(names, WIDTH - 4, break_on_hyphens=False)
    lines = ["  (#any-of? @function.builtin", *(f"    {line}" for line in wrapped)]
    lines[-1] += ")"
    return between(text, "BEGIN builtin functions", "END builtin functions", lines)


def rename(text: str, names: Mapping[str, str]) -> str:
    """`text` with each capture `@name` in `names` renamed (longest names first, whole
    names only: `@number` is not the start of `@number.float`)."""
    for old in sorted(names, key=len, reverse=True):
        text = re.sub(rf"@{re.escape(old)}(?![\w.])", f"@{names[old]}", text)
    return text


def blocks(text: str) -> tuple[str, list[str]]:
    """A query file's preamble (the comment lines it starts with) and its blocks: runs of
    lines between blank lines, each run of comments joined to the block after it."""
    runs = re.split(r"\n\s*\n", text.strip())
    preamble: list[str] = []
    while runs and _comments_only(runs[0]):
        preamble.append(runs.pop(0))
    out: list[str] = []
    pending: list[str] = []
    for run in runs:
        pending.append(run)
        if not _comments_only(run):
            out.append("\n\n".join(pending))
            pending = []
    if pending:
        out.append("\n\n".join(pending))
    return "\n\n".join(preamble), out


def _comments_only(run: str) -> bool:
    return all(line.lstrip().startswith(";") for line in run.splitlines())


def header(source: str, what: str) -> str:
    return (
        f"; Written by scripts/gen_tree_sitter.py from editors/tree-sitter-qvr/queries/{source}"
        f" ({what}): do not edit.\n\n"
    )


def helix_highlights(canonical: str) -> str:
    """The highlights for Helix: the first matching pattern wins there, so the blocks go
    in reverse order (after the preamble)."""
    preamble, body = blocks(canonical)
    text = "\n\n".join([preamble, *reversed(body)])
    what = "blocks in reverse order, Helix's capture names"
    return header("highlights.scm", what) + rename(text, HELIX_NAMES) + "\n"


def outputs() -> dict[Path, str]:
    """Every file this script writes and the text it should hold."""
    canonical = highlights((QUERIES / "highlights.scm").read_text(encoding="utf-8"))
    local_names = (QUERIES / "locals.scm").read_text(encoding="utf-8")
    injections = (QUERIES / "injections.scm").read_text(encoding="utf-8")
    return {
        GRAMMAR: grammar_js(GRAMMAR.read_text(encoding="utf-8")),
        QUERIES / "highlights.scm": canonical,
        HELIX_QUERIES / "highlights.scm": helix_highlights(canonical),
        HELIX_QUERIES / "locals.scm": header("locals.scm", "Helix's capture names")
        + rename(local_names, HELIX_NAMES),
        HELIX_QUERIES / "injections.scm": header("injections.scm", "as it is") + injections,
        ZED_QUERIES / "highlights.scm": header("highlights.scm", "Zed's capture names")
        + rename(canonical, ZED_NAMES),
        ZED_QUERIES / "injections.scm": header("injections.scm", "as it is") + injections,
    }


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in outputs().items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if check else 'wrote'}: {path}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
