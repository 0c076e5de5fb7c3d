"""Work that must grow linearly with its input: drawing a wide `fan`, a long `>>` chain
(19 and 190 terms: the parser takes 200 in a row), and `qvr check`'s report of a long
line with many diagnostics.

For each, the time (and output size) at n and at 10n and their ratio, from the
same run: linear work gives a ratio near 10, quadratic work near 100. Before
the fixes, `fan` with 8,000 branches took 5.7 s (the id allocator looked for a
free id from `_2` upwards for every branch) and the report of an 89 KB line
was 1.3 GB (the whole line under every diagnostic).

    .venv/bin/python bench/linear_output.py [--n N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from qvr_core.check import check
from qvr_core.cli.report import human
from qvr_core.graph import build_graph, to_dot, to_mermaid
from qvr_core.syntax.parser import MAX_TREE_DEPTH

HEAD = (
    "object Token : FinSet 16\n"
    "object Hidden : Real 4\n"
    "morphism embed : Token -> Hidden [role=embed]\n"
    "morphism cell : Hidden -> Hidden [role=kernel]\n"
)


def fan_source(n: int) -> str:
    return HEAD + f"let wide = embed >> fan({', '.join(['cell'] * n)})\n"


def chain_source(n: int) -> str:
    return HEAD + f"let long = embed >> {' >> '.join(['cell'] * n)}\n"


def undefined_source(n: int) -> str:
    return HEAD + f"let f = fan({', '.join(f'u{i}' for i in range(n))})\n"


def draw(text: str) -> int:
    module = check(text)
    graph = build_graph(module)
    return len(to_mermaid(graph)) + len(to_dot(graph))


def report(text: str) -> int:
    module = check(text)
    return len(human("bench.qvr", module.lines, module.diagnostics))


def best(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    times = []
    size = 0
    for _ in range(repeat):
        start = time.perf_counter()
        size = fn()
        times.append(time.perf_counter() - start)
    return min(times), size


def row(name: str, work: Callable[[str], int], source: Callable[[int], str], n: int, r: int):
    small, big = source(n), source(10 * n)
    t1, s1 = best(lambda: work(small), r)
    t10, s10 = best(lambda: work(big), r)
    print(
        f"{name:<28} n={n:>6}: {t1:8.3f} s {s1:>11,} chars   10n: {t10:8.3f} s {s10:>12,} chars"
        f"   time x{t10 / t1:5.1f}  size x{s10 / max(s1, 1):5.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=800)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("check + draw (Mermaid and DOT), and check + report; best of", args.repeat)
    row("fan(cell, cell, ...)", draw, fan_source, args.n, args.repeat)
    row("cell >> cell >> ...", draw, chain_source, MAX_TREE_DEPTH // 10 - 1, args.repeat)
    row("qvr check report, one line", report, undefined_source, args.n, args.repeat)


if __name__ == "__main__":
    main()
