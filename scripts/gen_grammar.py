"""Write the keyword and builtin-name regexes of the VS Code TextMate grammar from qvr's
registries.

The grammar (`vscode-extension/syntaxes/qvr.tmLanguage.json`) highlights keywords,
declaration kinds, families, type constructors, combinators, arithmetic builtins,
option keys, roles and option values by name. Those names come from the lexer's
keyword tables (`qvr_core.syntax.layout`), `qvr_core.builtins` and the checker's
option tables; this script rewrites each such `\\b(a|b|...)\\b` pattern (and the
`^\\s*(kind)\\s+(name)` pattern of the declaration kinds) in place and leaves
everything else as it is. `--check` exits 1 when the committed grammar is stale
(`tests/builtins/test_grammar.py` runs it).

    .venv/bin/python scripts/gen_grammar.py [--check]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from qvr_core.builtins import COMBINATORS, FAMILIES, FUNCTIONS, OBJECT_CONSTRUCTORS  # noqa: E402
from qvr_core.builtins.functions import LIFTED  # noqa: E402
from qvr_core.check.context import OPTION_KEYS, PARAM_SOURCES, ROLES  # noqa: E402
from qvr_core.syntax.layout import (  # noqa: E402
    CONTROL_KEYWORDS,
    DECLARATION_KEYWORDS,
    DECLARATION_KINDS,
)

GRAMMAR = ROOT / "vscode-extension" / "syntaxes" / "qvr.tmLanguage.json"
OPTION_SCOPE = "variable.parameter.option.qvr"
KIND_SCOPE = "storage.type.declaration.qvr"  # capture 1 of the declaration-kind pattern
NAME = "([A-Za-z_][A-Za-z0-9_]*)"

#: scope of a `{"name": scope, "match": "\\b(...)\\b"}` pattern -> the names it matches
WORDS: dict[str, Iterable[str]] = {
    "storage.type.qvr": DECLARATION_KEYWORDS,
    "keyword.control.qvr": CONTROL_KEYWORDS,
    "support.function.combinator.qvr": COMBINATORS,
    "support.function.builtin.qvr": (*FUNCTIONS, *LIFTED),
    "support.type.constructor.qvr": OBJECT_CONSTRUCTORS,
    "support.class.family.qvr": FAMILIES,
    "support.constant.role.qvr": ROLES,
    "support.constant.option-value.qvr": PARAM_SOURCES,
}


def alternation(names: Iterable[str]) -> str:
    return "|".join(names)


def _patterns(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if "match" in node:
            yield node
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for item in node:
            yield from _patterns(item)


def generate(grammar: dict[str, Any]) -> dict[str, Any]:
    """The grammar with every builtin-name pattern rewritten (in place; also returned)."""
    found: set[str] = set()
    for p in _patterns(grammar):
        scope = p.get("name")
        if scope in WORDS:
            p["match"] = rf"\b({alternation(WORDS[scope])})\b"
            found.add(scope)
        elif (
            scope is None
            and p.get("captures", {}).get("1", {}).get("name") == OPTION_SCOPE
            and p["match"].endswith(r")\s*(=)")
            and not p["match"].startswith(r"\b([A-Za-z_]")
        ):
            p["match"] = rf"\b({alternation(OPTION_KEYS)})\s*(=)"
            found.add("option keys")
        elif scope is None and p.get("captures", {}).get("1", {}).get("name") == KIND_SCOPE:
            p["match"] = rf"^\s*({alternation(DECLARATION_KINDS)})\s+{NAME}"
            found.add("declaration kinds")
    missing = {*WORDS, "option keys", "declaration kinds"} - found
    if missing:
        raise SystemExit(f"{GRAMMAR}: no pattern for {', '.join(sorted(missing))}")
    return grammar


def render(grammar: dict[str, Any]) -> str:
    return json.dumps(grammar, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    current = GRAMMAR.read_text(encoding="utf-8")
    fresh = render(generate(json.loads(current)))
    if "--check" in argv:
        if fresh != current:
            print(f"{GRAMMAR} is stale: run .venv/bin/python scripts/gen_grammar.py")
            return 1
        return 0
    if fresh != current:
        GRAMMAR.write_text(fresh, encoding="utf-8")
        print(f"wrote {GRAMMAR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
