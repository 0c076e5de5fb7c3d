"""`qvr sensitivity RUN.nc [--prior top|all|SITE,...] [--json] [--memory-budget SIZE]`.

Power-scaling sensitivity of a run's posterior to its prior and its likelihood
(`qvr_core.posterior.sensitivity`, computed by ArviZ's `az.psens` as priorsense
does): the draws they are estimated from (the values depend on how many), a row per
parameter element with both sensitivities and priorsense's diagnosis, then each
diagnosis's remedy. `--prior` says which priors are scaled:
the top-level ones by default (those that read no other latent), all of them, or the
sites named. The run must have a `log_prior` and a
`log_likelihood` group, which `qvr run --output` writes for NUTS and SVI.

Exit status: 0 when computed (flagged or not), 2 for a file that cannot be read,
lacks those groups or would not fit the memory budget (sized from its headers
before any array is read): one line naming the file and what to do. ArviZ is
imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING

from qvr_core.cli.usage import (
    EXIT_USAGE,
    missing_extra,
    one_line_errors,
    read_budget_argument,
)
from qvr_core.host.extras import ARVIZ_MODULES

if TYPE_CHECKING:
    from qvr_core.posterior.sensitivity import Sensitivity


def add_arguments(p: argparse.ArgumentParser) -> None:
    one_line_errors(p, "sensitivity")
    p.add_argument("file", metavar="RUN", help="a file written by qvr run --output (nuts or svi)")
    p.add_argument(
        "--prior",
        default="top",
        metavar="top|all|SITE,...",
        help="the priors to scale: the top-level ones (default), all, or these sites",
    )
    p.add_argument("--json", action="store_true", help="print the sensitivities as JSON")
    read_budget_argument(p)


def main(args: argparse.Namespace) -> int:
    """Compute and print the sensitivities (or JSON). Returns the exit status."""
    missing = missing_extra("sensitivity", ARVIZ_MODULES, "arviz")
    if missing is not None:
        return missing
    from qvr_core.posterior.comparison import RunFileError, read_run
    from qvr_core.posterior.sensitivity import sensitivity

    try:
        idata = read_run(args.file, budget=args.memory_budget)
        chosen = args.prior if args.prior in ("top", "all") else args.prior.split(",")
        found = sensitivity(idata, args.file, chosen)
    except RunFileError as e:
        print(f"qvr sensitivity: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(found.to_json(), indent=2))
        return 0
    print(format_sensitivity(found))
    return 0


def format_sensitivity(s: Sensitivity) -> str:
    """The table (a row per element), then each diagnosis with its remedy."""
    from qvr_core.posterior.sensitivity import REMEDIES

    lines = [
        "power-scaling sensitivity (Kallioinen et al. 2023, by ArviZ): how far each "
        f"posterior moves when the prior or the likelihood is scaled; {s.threshold:g} and "
        "over is sensitive",
        f"priors scaled: {', '.join(s.priors)}"
        + (f" ({s.note})" if s.note else " (the top-level ones; --prior all for every one)"),
        f"from {_draws(s)}: estimates, noisier the fewer the draws; compare runs (or "
        "priorsense's numbers) of as many draws",
    ]
    header = ["", "prior", "likelihood", "diagnosis"]
    cells = [[r.label, _num(r.prior), _num(r.likelihood), r.diagnosis or "-"] for r in s.rows]
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    for row in [header, *cells]:
        first = row[0].ljust(widths[0])
        middle = [row[i].rjust(widths[i]) for i in (1, 2)]
        lines.append("  ".join([first, *middle, row[3]]).rstrip())
    flagged = sorted({r.diagnosis for r in s.flagged})
    for diagnosis in flagged:
        which = ", ".join(r.label for r in s.flagged if r.diagnosis == diagnosis)
        lines.append(f"  warning: {diagnosis}: {which}")
        lines.append(f"    remedy: {REMEDIES[diagnosis]}")
    if not flagged:
        lines.append("  no parameter is sensitive to its prior beyond the threshold")
    return "\n".join(lines)


def _draws(s: Sensitivity) -> str:
    """`4,000 draws (4 chains x 1,000)`, or the count alone when the chains are unknown."""
    if s.chains > 0 and s.draws % s.chains == 0:
        return f"{s.draws:,} draws ({s.chains} chains x {s.draws // s.chains:,})"
    return f"{s.draws:,} draws"


def _num(x: float) -> str:
    return f"{x:.3f}" if math.isfinite(x) else "nan"
