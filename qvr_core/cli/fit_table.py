"""The posterior summary of a run as a text table with its warnings (torch-free).

Reads the JSON form of `qvr_core.inference.summary.Summary` (what `qvr run
--json` prints under "posterior" and what the editor receives), so the
terminal shows exactly the numbers a client gets.
"""

from __future__ import annotations

import math
from typing import Any

COLUMNS = (
    ("mean", "mean"),
    ("sd", "sd"),
    ("5%", "q5"),
    ("50%", "q50"),
    ("95%", "q95"),
    ("ess_bulk", "ess_bulk"),
    ("ess_tail", "ess_tail"),
    ("r_hat", "r_hat"),
)


def _number(key: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if key.startswith("ess"):
        return f"{value:.0f}"
    if key == "r_hat":
        return f"{value:.3f}"
    return f"{value:.3g}"


def format_table(posterior: dict[str, Any], indent: str = "  ") -> list[str]:
    """The table (a row per site element shown, a line for each site's hidden elements),
    then one line per warning with its remedy."""
    rows = posterior.get("rows", [])
    columns = [(h, k) for h, k in COLUMNS if any(k in r for r in rows)]
    cells = [[r["label"], *(_number(k, r.get(k)) for _, k in columns)] for r in rows]
    header = ["", *(h for h, _ in columns)]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(len(header))]

    def line(values: list[str]) -> str:
        first = values[0].ljust(widths[0])
        rest = (v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True))
        return indent + "  ".join([first, *rest]).rstrip()

    out = [line(header)] if rows else []
    by_site: dict[str, list[list[str]]] = {}
    for row, c in zip(rows, cells, strict=True):
        by_site.setdefault(row["site"], []).append(c)
    for name, site in posterior.get("sites", {}).items():
        out.extend(line(c) for c in by_site.get(name, []))
        hidden = site.get("size", 0) - site.get("shown", 0)
        if hidden > 0:
            worst = ""
            if "r_hat_max" in site:
                worst = (
                    f": worst of all {site['size']}: r_hat {_number('r_hat', site['r_hat_max'])}, "
                    f"ess_bulk {_number('ess', site['ess_bulk_min'])}, "
                    f"ess_tail {_number('ess', site['ess_tail_min'])}"
                )
            out.append(f"{indent}... {hidden} more elements of {name}{worst}")
    warnings = posterior.get("warnings", [])
    for w in warnings:
        out.append(f"{indent}warning: {w['message']}")
        out.append(f"{indent}  remedy: {w['remedy']}")
    if rows and not warnings and "r_hat" in dict(columns).values():
        out.append(f"{indent}no convergence warnings")
    return out
