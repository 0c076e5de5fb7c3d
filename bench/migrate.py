"""What `qvr migrate --to current` does to the shared corpus, by era.

For each era (../shared/corpus/MANIFEST.tsv): the files, those HEAD's grammar
(quivers' own parser, tests/conformance/oracle.py) accepts as written, those
migrate refuses (they do not parse), those it changes, those with a construct
left as written, and those HEAD accepts after migration. Then the time of a
migration against the time of a bare parse of the same files (the baseline,
measured in the same run): a migration parses once per round of rewrites.

    .venv/bin/python bench/migrate.py [--files]   (--files: each file HEAD still rejects)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qvr_core.migrate import migrate_text
from qvr_core.syntax.parser import parse
from tests.conformance import oracle
from tests.conformance.shared import corpus

ERAS = ("E1", "E2", "E3", "E3'", "E4", "E5")
COLUMNS = ("files", "HEAD as written", "refused", "changed", "left", "HEAD after")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", action="store_true", help="list the files HEAD still rejects")
    args = ap.parse_args()
    files = corpus()
    if not files:
        print("no corpus: ../shared/corpus not found (set QVR_SHARED)")
        return 2
    try:
        oracle.parsers()
    except oracle.OracleUnavailable as exc:
        print(f"quivers' parsers are unavailable: {exc}")
        return 2
    counts: dict[str, Counter[str]] = {era: Counter() for era in ERAS}
    rejected: list[str] = []
    for f in files:
        text = f.text()
        c = counts[f.era]
        c["files"] += 1
        c["HEAD as written"] += oracle.accepts("HEAD", text)
        result = migrate_text(text, "current")
        if not result.ok:
            c["refused"] += 1
            continue
        c["changed"] += result.text != text
        c["left"] += bool(result.left)
        if oracle.accepts("HEAD", result.text):
            c["HEAD after"] += 1
        else:
            rejected.append(f"{f.era}\t{f.name}\t{len(result.left)} left")
    print("| era | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    total: Counter[str] = Counter()
    for era in ERAS:
        total.update(counts[era])
        print(f"| {era} | " + " | ".join(str(counts[era][k]) for k in COLUMNS) + " |")
    print("| all | " + " | ".join(str(total[k]) for k in COLUMNS) + " |")

    texts = [f.text() for f in files]
    parse_s = _best(lambda: [parse(t) for t in texts])
    migrate_s = _best(lambda: [migrate_text(t) for t in texts])
    print(
        f"\n{len(texts)} files: bare parse {parse_s * 1000:.0f} ms, "
        f"migrate {migrate_s * 1000:.0f} ms ({migrate_s / parse_s:.1f}x the parse)"
    )
    if args.files:
        print("\nHEAD still rejects after migration:")
        print("\n".join(rejected))
    return 0


def _best(run, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


if __name__ == "__main__":
    raise SystemExit(main())
