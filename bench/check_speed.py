"""Parse + check time on generated files of 500, 5,000 and 50,000 lines.

The baseline is lark's own LALR parser (its lexer, an indenter and tree
building) over the same whole file, with qvr's grammar: the cost of
"just parsing" that qvr's parse + check is compared with. Goal: parse +
check within 2x of the bare parse, growing linearly with the file.

Then what an editor does on each keystroke: an IncrementalChecker re-checks
the file after a one-character edit in its middle (its diagnostics final),
and builds the module's tables for it; next to a check from scratch.

    .venv/bin/python bench/check_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import sys
import time
from pathlib import Path
from typing import ClassVar

from lark import Lark
from lark.indenter import Indenter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generated import generate

from qvr_core.check import check
from qvr_core.check.incremental import IncrementalChecker
from qvr_core.syntax.layout import KEYWORDS, PUNCTUATION, SOFT_KEYWORDS
from qvr_core.syntax.parser import parse

GRAMMAR = Path(__file__).resolve().parents[1] / "qvr_core" / "syntax" / "grammar.lark"

# Terminals and a whole-file structure around qvr's own rules, for lark alone.
FILE_RULES = r"""
start: _NL? item*
?item: object_decl _NL | morphism_decl _NL | let_decl _NL | export_decl _NL | program
program: program_header _NL _INDENT (step _NL)+ _DEDENT

COMMENT: /#[^\n]*/
_NL: (/\r?\n[\t ]*/ | COMMENT)+
%ignore /[\t ]+/
%declare _INDENT _DEDENT
"""


class _Indenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types: ClassVar[list[str]] = ["LPAR", "LSQB"]
    CLOSE_PAREN_types: ClassVar[list[str]] = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 4


def terminals() -> str:
    """Lark terminals for the tokens qvr's lexer (layout.py) makes. The words that are
    keywords only in context are left out of lark's lexing (a pattern that cannot
    match the file) but for the object constructors: the generated file uses no other."""
    by_type: dict[str, list[str]] = {}
    for text, kind in {**KEYWORDS, **PUNCTUATION}.items():
        by_type.setdefault(kind, []).append(text)
    ctors = sorted(text for text, kind in SOFT_KEYWORDS.items() if kind == "CTOR")
    out = [f"CTOR.3: /(?:{'|'.join(ctors)})\\b/"]
    for kind, texts in by_type.items():
        alternatives = " | ".join(json.dumps(t) for t in sorted(texts, key=len, reverse=True))
        out.append(f"{kind}: {alternatives}")
    for kind in sorted(set(SOFT_KEYWORDS.values()) - {"CTOR"}):
        out.append(f"{kind}: /\\x01{kind}/")  # a control character: never in the file
    out += [
        r"NAME: /[A-Za-z_][A-Za-z0-9_]*/",
        r"FLOAT.2: /\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+/",
        r"INT: /\d+/",
        r'STRING: /"(?:[^"\\]|\\.)*"/',
    ]
    return "\n".join(out) + "\n"


def bare_lark() -> Lark:
    rules = re.sub(r"^%declare .*$", "", GRAMMAR.read_text(), flags=re.MULTILINE)
    rules = rules.replace("?decl:", "?decl_:").replace("?step:", "step:")
    return Lark(
        rules + FILE_RULES + terminals(),
        parser="lalr",
        postlex=_Indenter(),
        start="start",
        maybe_placeholders=False,
    )


def best_of(repeat: int, fn, *args) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    lark = bare_lark()
    columns = ("lines", "lark parse", "qvr parse", "qvr check", "parse+check", "ratio", "us/line")
    widths = (7, 11, 10, 10, 12, 6, 8)
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for n in (500, 5_000, 50_000):
        text = generate(n)
        lines = text.count("\n")
        lark.parse(text)  # the baseline must accept the file
        assert check(text).ok
        t_lark = best_of(args.repeat, lark.parse, text)
        t_parse = best_of(args.repeat, parse, text)
        t_total = best_of(args.repeat, check, text)
        print(
            f"{lines:>7} {t_lark * 1e3:>9.0f}ms {t_parse * 1e3:>8.0f}ms "
            f"{(t_total - t_parse) * 1e3:>8.0f}ms {t_total * 1e3:>10.0f}ms "
            f"{t_total / t_lark:>6.2f} {t_total / lines * 1e6:>8.1f}"
        )
    print("ratio = (qvr parse + check) / lark parse of the same file; goal <= 2, us/line flat")
    print()
    incremental(args.repeat)
    return 0


def incremental(repeat: int) -> None:
    """Re-check after an edit: diagnostics, then tables, against a check from scratch."""
    columns = ("lines", "from scratch", "re-check", "tables", "ratio")
    widths = (7, 13, 10, 10, 6)
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for n in (500, 5_000, 50_000):
        text = generate(n)
        middle = text.index("(h)", len(text) // 2)
        versions = [text[:middle] + "X" + text[middle:], text]  # a typo made and undone
        checker = IncrementalChecker()
        checker.check(text).materialize()
        rechecks, builds = [], []
        for k in range(2 * max(repeat, 3)):
            gc.collect()
            t0 = time.perf_counter()
            module = checker.check(versions[k % 2])
            t1 = time.perf_counter()
            module.materialize()
            rechecks.append(t1 - t0)
            builds.append(time.perf_counter() - t1)
        t_full = best_of(repeat, check, text)
        t_again = min(rechecks)
        print(
            f"{text.count(chr(10)):>7} {t_full * 1e3:>11.0f}ms {t_again * 1e3:>8.1f}ms "
            f"{min(builds) * 1e3:>8.1f}ms {t_again / t_full:>6.2f}"
        )
    print("ratio = re-check after a one-character edit / check from scratch (best of each)")


if __name__ == "__main__":
    sys.exit(main())
