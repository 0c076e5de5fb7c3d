"""Sizes and counts as messages write them (`12.3 GB`, `1,234,567`, `2.05e+301`).

The bottom layer: the data reader, the estimators and the runtime's guards all
say sizes the same way.
"""

from __future__ import annotations


def format_bytes(n: int | float) -> str:
    """`12.3 GB`, `512 MB`: decimal units, three significant digits."""
    if isinstance(n, int) and n >= 10**21:
        return f"{_scientific(n)} bytes"  # past EB: no float holds it, no unit helps
    n = float(n)
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB", "EB"):
        if n < 1000 or unit == "EB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.3g} {unit}"
        n /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


def format_count(n: int) -> str:
    """`1,234,567`, or `2.05e+301` past what a reader counts digits of."""
    return f"{n:,}" if n < 10**15 else _scientific(n)


def _scientific(n: int) -> str:
    """`2.05e+301` for a positive integer of any size, in integer arithmetic: a chain of
    stacks can count more parameters than a float holds or `str()` will print."""
    exponent = int((n.bit_length() - 1) * 0.30102999566398)  # at most log10(n)
    digits = n // 10 ** max(exponent - 3, 0)  # 4 or more leading digits
    while digits >= 10_000:
        digits //= 10
        exponent += 1
    rounded = (digits + 5) // 10  # three significant digits
    if rounded == 1000:
        rounded, exponent = 100, exponent + 1
    return f"{rounded / 100:.3g}e+{exponent:02d}"


def element_label(name: str, shape: tuple[int, ...], i: int) -> tuple[list[int], str]:
    """The index and row label of a site's `i`-th element in C order (`theta[3]`, `mu`):
    how the run summary, the live table and `qvr sensitivity` name an element."""
    index: list[int] = []
    for size in reversed(shape):
        i, j = divmod(i, size)
        index.append(j)
    index.reverse()
    return index, name + (f"[{', '.join(map(str, index))}]" if index else "")
