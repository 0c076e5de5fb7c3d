"""`qvr compare RUN.nc [RUN.nc ...] [--ic loo|waic] [--var SITE] [--checks] [--json]`.

Compares the runs `qvr run --output` wrote by PSIS-LOO (or WAIC) through ArviZ
(`qvr_core.posterior.comparison`): the table `az.compare` gives (one row for one
run), then each warning with its remedy. `--checks` adds each run's posterior
predictive checks (`qvr_core.posterior.predictive_checks`: test statistics with
Bayesian p-values, LOO-PIT; needs `qvr run --predictive`). `--json` prints
`Comparison.to_json()` (with `--checks`, a "checks" object by run name too).

Exit status: 0 when compared (warnings or not), 1 when the runs cannot be compared
with each other (different numbers of observations), 2 for a file that cannot be
read or lacks what is asked (no log_likelihood group, no posterior_predictive for
`--checks`, no such `--var`), holds what PSIS-LOO cannot read (a log-likelihood that
is not real numbers, too few draws, no posterior), or whose arrays, sized from its
headers before any is read, would not fit the memory budget (`--memory-budget`, by
default half the memory available, as `qvr run`'s): one line naming the file and what
to do. ArviZ is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING, Any

from qvr_core.cli.usage import (
    EXIT_USAGE,
    missing_extra,
    one_line_errors,
    read_budget_argument,
)
from qvr_core.host.extras import ARVIZ_MODULES

if TYPE_CHECKING:
    from qvr_core.posterior.comparison import Comparison
    from qvr_core.posterior.predictive_checks import PredictiveCheck

COLUMNS = ("rank", "elpd", "se", "p", "d_elpd", "dse", "weight", "warning")


def add_arguments(p: argparse.ArgumentParser) -> None:
    one_line_errors(p, "compare")
    p.add_argument("files", nargs="+", metavar="RUN", help="files written by qvr run --output")
    p.add_argument(
        "--ic", choices=("loo", "waic"), default="loo", help="PSIS-LOO (default) or WAIC"
    )
    p.add_argument(
        "--var",
        metavar="SITE",
        help="compare by one observed site's log-likelihood (default: every site together)",
    )
    p.add_argument(
        "--checks",
        action="store_true",
        help="also run posterior predictive checks of each run (needs qvr run --predictive)",
    )
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    read_budget_argument(p, "runs whose arrays need")


def main(args: argparse.Namespace) -> int:
    """Compare the files; print the table and warnings (or JSON). Returns the exit status."""
    missing = missing_extra("compare", ARVIZ_MODULES, "arviz")
    if missing is not None:
        return missing
    from qvr_core.posterior.comparison import (
        ComparisonError,
        RunFileError,
        compare_runs,
        read_runs,
    )
    from qvr_core.posterior.predictive_checks import PredictiveCheckError, check_predictive

    try:
        runs = read_runs(args.files, need_log_likelihood=True, budget=args.memory_budget)
        comparison = compare_runs(runs, ic=args.ic, var_name=args.var)
        checks = {}
        if args.checks:
            for (n, idata), path in zip(runs.items(), args.files, strict=True):
                try:
                    checks[n] = check_predictive(idata, name=n)
                except PredictiveCheckError as e:
                    raise RunFileError(path, str(e).removeprefix(f"{n} ")) from None
    except RunFileError as e:
        print(f"qvr compare: {e}", file=sys.stderr)
        return EXIT_USAGE
    except ComparisonError as e:
        print(f"qvr compare: {e}", file=sys.stderr)
        return 1
    if args.json:
        out = comparison.to_json()
        if args.checks:
            out["checks"] = {n: c.to_json() for n, c in checks.items()}
        print(json.dumps(_json_safe(out), indent=2))
        return 0
    print(format_comparison(comparison))
    for n, c in checks.items():
        print()
        print(format_checks(n, c))
    return 0


def format_comparison(c: Comparison) -> str:
    """The comparison as `az.compare` prints it (rank 0 the best), then the notes and
    each warning with its remedy."""
    what = "PSIS-LOO" if c.ic == "loo" else "WAIC"
    lines = [f"{what}: expected log predictive density ({c.scale} scale; higher is better)"]
    header = ["", *COLUMNS]
    cells = [
        [
            r.name,
            str(r.rank),
            _num(r.elpd, ".2f"),
            _num(r.se, ".2f"),
            _num(r.p, ".2f"),
            _num(r.d_elpd, ".2f"),
            _num(r.dse, ".2f"),
            _num(r.weight, ".2f"),
            str(r.warning),
        ]
        for r in c.rows
    ]
    lines.extend(_table(header, cells))
    lines.extend(f"  note: {n}" for n in c.notes)
    lines.extend(_warning_lines(c.warnings))
    if not c.warnings:
        lines.append("  no warnings")
    return "\n".join(lines)


def format_checks(name: str, check: PredictiveCheck) -> str:
    """A run's predictive checks: per site, its statistics with their p-values and its
    LOO-PIT, then the warnings with their remedies."""
    lines = [f"predictive checks of {name} ({check.group} against observed_data):"]
    for s in check.sites:
        kind = "discrete" if s.discrete else "continuous"
        lines.append(f"  {s.site} ({kind}, {s.size} values)")
        header = ["", "data", "replicated", "sd", "p"]
        cells = [
            [
                st.name,
                _num(st.observed, ".4g"),
                _num(st.replicated_mean, ".4g"),
                _num(st.replicated_sd, ".3g"),
                _num(st.p_value, ".3f") + (" *" if st.flagged else ""),
            ]
            for st in s.statistics
        ]
        lines.extend(_table(header, cells, indent="    "))
        if s.loo_pit is not None:
            pit = s.loo_pit
            lines.append(
                f"    LOO-PIT: KS distance {pit.ks_distance:.3f}, "
                + ("outside" if pit.outside_band else "inside")
                + f" ArviZ's 99% ECDF band ({pit.shape})"
            )
        elif s.note:
            lines.append(f"    LOO-PIT: none: {s.note}")
    lines.extend(_warning_lines(check.warnings))
    if not check.warnings:
        lines.append("  no warnings (* marks a p-value outside [0.05, 0.95])")
    return "\n".join(lines)


def _warning_lines(found: Any) -> list[str]:
    out = []
    for w in found:
        out.append(f"  warning: {w.message}")
        out.append(f"    remedy: {w.remedy}")
    return out


def _table(header: list[str], cells: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]

    def line(values: list[str]) -> str:
        first = values[0].ljust(widths[0])
        rest = (v.rjust(w) for v, w in zip(values[1:], widths[1:], strict=True))
        return indent + "  ".join([first, *rest]).rstrip()

    return [line(header), *(line(c) for c in cells)]


def _num(v: float, spec: str) -> str:
    return "n/a" if not math.isfinite(v) else format(v, spec)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value
