"""How much real QVR qvr reads: the shared corpus by era.

For each era of the language (../shared/corpus/MANIFEST.tsv), the files
that a quivers grammar from 0.11 on accepts (quivers' own parsers, see
tests/conformance/oracle.py), those qvr parses with no syntax error
(QVR001), those qvr checks with no error at all, and those that run
under `qvr run --method prior` (its first export, a few draws, no data
file: a model that reads data names cannot, and counts as not running). The `of 0.11+`
columns count only the files quivers 0.11+ accepts: the goal is that they
are all there. Files quivers accepts only before 0.11 (E1, E2) should get
an era diagnostic each, never a syntax error.

    .venv/bin/python bench/corpus.py [--files] [--no-run]
        (--files: list each file that misses; --no-run: skip the prior column)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qvr_core.check import check
from qvr_core.syntax import ast
from tests.conformance import oracle
from tests.conformance.shared import corpus

ERAS = ("E1", "E2", "E3", "E3'", "E4", "E5")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", action="store_true", help="list the files that miss a column")
    ap.add_argument("--no-run", action="store_true", help="skip the `--method prior` column")
    args = ap.parse_args()
    files = corpus()
    if not files:
        print("no corpus: ../shared/corpus not found (set QVR_SHARED)")
        return 2
    try:
        oracle.parsers()
        have_oracle = True
    except oracle.OracleUnavailable as exc:
        print(f"(quivers' parsers unavailable: {exc}; the 0.11+ columns are empty)")
        have_oracle = False
    counts: dict[str, Counter[str]] = {era: Counter() for era in ERAS}
    misses: list[str] = []
    for f in files:
        text = f.text()
        modern = have_oracle and oracle.modern(oracle.accepted_by(text))
        module = check(text)
        codes = [d.code for d in module.diagnostics if d.is_error]
        parsed = "QVR001" not in codes and "QVR000" not in codes
        clean = not codes
        row = counts[f.era]
        row["files"] += 1
        row["modern"] += modern
        row["parsed"] += parsed
        row["clean"] += clean
        row["modern parsed"] += modern and parsed
        row["modern clean"] += modern and clean
        if modern:
            declared = [d for d in module.ast.decls if isinstance(d, ast.ProgramDecl)]
            row["programs"] += len(declared)
            row["typed"] += sum(
                d.name.text in module.programs or d.name.text in module.models for d in declared
            )
            row["models"] += sum(d.name.text in module.models for d in declared)
        if clean and not args.no_run:
            why = _prior_failure(text)
            row["prior"] += why is None
            row["modern prior"] += modern and why is None
            if args.files and modern and why is not None:
                misses.append(f"{f.era:4} {f.name}: prior: {why[:110]}")
        if args.files and (not parsed or (modern and not clean)):
            first = next(d for d in module.diagnostics if d.is_error)
            where = f"{first.span.start_line + 1}:{first.span.start_col + 1}"
            misses.append(f"{f.era:4} {f.name}:{where} {first.code} {first.message[:90]}")
    columns = (
        "era",
        "files",
        "0.11+",
        "parse",
        "of 0.11+",
        "check",
        "of 0.11+",
        "prior",
        "of 0.11+",
        "typed",
    )
    widths = (5, 6, 6, 6, 9, 6, 9, 6, 9, 14)
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    total: Counter[str] = Counter()
    for era in ERAS:
        total.update(counts[era])
        _row(era, counts[era], widths)
    _row("all", total, widths)
    print(
        "0.11+: quivers 0.11 .. 0.25.2 accepts; parse: no QVR001; check: no error;"
        " prior: `qvr run --method prior` runs it; 'of 0.11+': among the 0.11+ files"
    )
    print(
        "typed: programs of the 0.11+ files the checker types (not names only, QVR011) of"
        " all their programs; in parentheses those typed as Bayesian models"
    )
    for line in misses:
        print(line)
    return 0


def _prior_failure(text: str) -> str | None:
    """Why `qvr run --method prior` does not run the file (None: it runs)."""
    from qvr_core.inference.errors import InferenceError
    from qvr_core.runs.run import run_inference

    try:
        run_inference(text, method="prior", steps=2, batch=2, seq_len=3)
    except InferenceError as e:
        return str(e).splitlines()[0]
    except Exception as e:  # a crash is a miss too; say what it was
        return f"{type(e).__name__}: {e}".splitlines()[0]
    return None


def _row(era: str, c: Counter[str], widths: tuple[int, ...]) -> None:
    cells = (
        era,
        str(c["files"]),
        str(c["modern"]),
        str(c["parsed"]),
        f"{c['modern parsed']}/{c['modern']}",
        str(c["clean"]),
        f"{c['modern clean']}/{c['modern']}",
        str(c["prior"]),
        f"{c['modern prior']}/{c['modern']}",
        f"{c['typed']}/{c['programs']} ({c['models']})",
    )
    print(" ".join(f"{cell:>{w}}" for cell, w in zip(cells, widths, strict=True)))


if __name__ == "__main__":
    sys.exit(main())
