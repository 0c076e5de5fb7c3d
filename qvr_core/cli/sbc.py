"""`qvr sbc FILE [--program P] [--data PATH] [--sims N] [--method nuts|svi] [--steps S]
[--chains C] [--draws L] [--prob P] [--seed S] [--jobs J] [--output sbc.nc [--resume]]
[--json] [--memory-budget SIZE]`.

Simulation-based calibration of a model program (`qvr_core.runs.sbc` simulates and
fits, `qvr_core.posterior.calibration` judges the ranks): for each of N simulations
the parameters are drawn from their priors and the observed sites from the model
given the data file's data names (or synthetic ones, as `qvr data` makes), the
program is fitted to them as `qvr run` fits, and each true value is ranked among L
of the fit's draws, `--jobs` simulations at a time in as many processes (by default
one per core; the same ranks as one after another, each simulation having its own
seed). Then a verdict per parameter element (calibrated, or how not) with its
remedy; `--prob` is the band's probability (0.95: a right fit leaves it for one element
in twenty; a wider band, 0.999, for when every element must pass). Progress goes to
stderr. `--output` writes the ranks after every simulation (netCDF: a variable per site,
`simulation` first, the settings in the attributes), so a run stopped by Ctrl-C keeps
what it did, and `--resume` goes on from it with the same settings; `qvr plot --kind
sbc` draws it.

Exit status: 0 when judged (calibrated or not), 1 for a run that cannot be calibrated
(a network program, a fit that cannot run at all), 2 for arguments out of range or an
output that cannot be resumed. ArviZ (for the uniformity band) is needed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qvr_core.cli.usage import EXIT_USAGE, memory_size, missing_extra, one_line_errors
from qvr_core.draws import arviz_adapter
from qvr_core.host.extras import ARVIZ_MODULES, RUN_MODULES
from qvr_core.host.files import UnreadableFile, command_line_roots, read_text

if TYPE_CHECKING:
    from qvr_core.posterior.calibration import Calibration
    from qvr_core.runs.sbc import SbcRun

MAX_SIMS = 100_000


def _count(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is not in {low}..{high:,}")
        return value

    return parse


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not strictly between 0 and 1")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    one_line_errors(p, "sbc")
    p.add_argument("file", help="the .qvr source file")
    p.add_argument("--program", help="the exported model program (default: the first)")
    p.add_argument("--data", metavar="PATH", help="its data names (default: synthetic ones)")
    p.add_argument("--sims", type=_count(1, MAX_SIMS), default=100, help="simulations (100)")
    p.add_argument("--method", choices=("nuts", "svi"), default="nuts", help="default nuts")
    p.add_argument(
        "--steps", type=_count(1, 1_000_000), default=1000, help="per fit, as qvr run's (1000)"
    )
    p.add_argument("--chains", type=_count(1, 64), default=2, help="NUTS chains per fit (2)")
    p.add_argument(
        "--draws", type=_count(1, 10_000), default=100, help="draws a true value is ranked in (100)"
    )
    p.add_argument(
        "--prob",
        type=_probability,
        default=None,  # calibration's PROB, read once a run needs numpy anyway
        help="the simultaneous band's probability (0.95)",
    )
    p.add_argument(
        "--seed", type=_count(0, 2**63 - 1), default=0, help="simulation i uses seed+1+i"
    )
    p.add_argument(
        "--jobs",
        type=_count(1, 256),
        default=None,
        help="simulations at a time, each in its own process (default: one per core)",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write the ranks (netCDF) as it goes")
    p.add_argument(
        "--resume", action="store_true", help="go on from --output's ranks (same settings)"
    )
    p.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    p.add_argument("--memory-budget", type=memory_size, metavar="SIZE", help="as qvr run's")


def main(args: argparse.Namespace) -> int:
    """Simulate, fit, judge; print the verdicts (or JSON). Returns the exit status."""
    missing = missing_extra("sbc", RUN_MODULES + ARVIZ_MODULES, "run,arviz")
    if missing is not None:
        return missing
    from qvr_core.inference.chains import usable_cores
    from qvr_core.inference.errors import InferenceError
    from qvr_core.posterior.calibration import PROB, calibration
    from qvr_core.runs.sbc import calibrate

    prob = PROB if args.prob is None else args.prob
    if args.resume and not args.output:
        return _fail("--resume goes on from --output's ranks: give --output")
    try:  # as every command reads a source: a regular file, bounded
        source = read_text(args.file, command_line_roots(args.file), universal_newlines=True)
    except UnreadableFile as e:
        return _fail(f"cannot read {args.file}: {e.reason}")
    resume = None
    if args.resume and Path(args.output).exists():
        try:
            resume = _read(Path(args.output), args)
        except ValueError as e:
            return _fail(f"{args.output}: {e}")
    started = time.perf_counter()

    first = resume.done if resume is not None else 0

    def progress(so_far: SbcRun, done: int, total: int) -> None:
        each = (time.perf_counter() - started) / max(done - first, 1)
        print(f"qvr sbc: simulation {done}/{total} ({each:.1f} s each)", file=sys.stderr)
        if args.output:
            _write(Path(args.output), so_far, total, prob)

    try:
        run = calibrate(
            source,
            path=args.file,
            program=args.program,
            data=args.data,
            sims=args.sims,
            method=args.method,
            steps=args.steps,
            chains=args.chains,
            draws=args.draws,
            seed=args.seed,
            memory_budget=args.memory_budget,
            jobs=args.jobs if args.jobs is not None else usable_cores(),
            resume=resume,
            on_progress=progress,
        )
    except InferenceError as e:
        print(f"qvr sbc: {e}", file=sys.stderr)
        return 1
    if args.output:
        _write(Path(args.output), run, args.sims, prob)
    judged = calibration(run.arrays(), run.draws, prob)
    if args.json:
        out = judged.to_json()
        out["failed"] = run.failed
        out["simulations"] = run.done
        print(json.dumps(out, indent=2))
        return 0
    print(format_calibration(judged, run))
    return 0


def format_calibration(c: Calibration, run: SbcRun) -> str:
    """A row per element (mean fractional rank, verdict), then each verdict's remedy."""
    from qvr_core.posterior.calibration import REMEDIES

    lines = [
        f"simulation-based calibration of {run.program}: {run.done} simulations, "
        f"{run.method} fits, each true value ranked among {run.draws} draws; ranks "
        f"uniform within ArviZ's {c.prob * 100:g}% simultaneous band are calibrated"
    ]
    rows = [["", "sims", "mean rank", "verdict"]] + [
        [e.label, str(e.simulations), f"{e.mean:.3f}", e.verdict] for e in c.elements
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        lines.append(
            "  ".join([r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].rjust(widths[2]), r[3]])
        )
    for verdict in sorted({e.verdict for e in c.miscalibrated}):
        which = ", ".join(e.label for e in c.miscalibrated if e.verdict == verdict)
        lines.append(f"  warning: {verdict}: {which}")
        lines.append(f"    remedy: {REMEDIES[verdict]}")
    if run.failed:
        lines.append(f"  warning: {len(run.failed)} fits failed and are left out: {run.failed[0]}")
    if not c.miscalibrated and c.elements:
        lines.append("  every element's ranks are uniform within the band")
    return "\n".join(lines)


def _write(path: Path, run: SbcRun, sims: int, prob: float) -> None:
    """The ranks so far as InferenceData (netCDF) with one group, `sbc_ranks`, what
    `qvr plot --kind sbc` draws (in the band of `prob`, as judged here); written beside
    `path` and renamed over it."""
    import warnings

    import xarray as xr

    from qvr_core.inference.results import write_replacing
    from qvr_core.posterior.figures import SBC_GROUP

    variables = {
        name: (["simulation", *(f"{name}_dim_{k}" for k in range(v.ndim - 1))], v)
        for name, v in run.arrays().items()
    }
    attrs = {
        "program": run.program,
        "method": run.method,
        "draws": run.draws,
        "prob": prob,
        "seed": run.seed,
        "sims": sims,
        "done": run.done,
        "failed": "\n".join(run.failed),
        "status": "complete" if run.done >= sims else "partial",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's notes on its rewrite and custom groups
        groups: dict[str, Any] = {SBC_GROUP: xr.Dataset(variables, attrs=attrs)}
        idata = arviz_adapter.of_groups(groups)
    write_replacing(path, idata.to_netcdf)


def _read(path: Path, args: argparse.Namespace) -> SbcRun:
    """The stopped run in `path`, if it was made with these settings."""
    import warnings

    import numpy as np

    from qvr_core.posterior.figures import SBC_GROUP
    from qvr_core.runs.sbc import resumed

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            data = arviz_adapter.from_netcdf(path)[SBC_GROUP]
        attrs = dict(data.attrs)
        ranks = {str(n): np.asarray(v.values) for n, v in data.data_vars.items()}
    except Exception as e:  # netCDF readers fail in their own words; no such group
        raise ValueError(f"cannot read it as qvr sbc's ranks ({type(e).__name__})") from None
    wanted = {"method": args.method, "draws": args.draws, "seed": args.seed}
    for key, value in wanted.items():
        if key not in attrs or str(attrs[key]) != str(value):
            raise ValueError(
                f"made with --{key} {attrs.get(key)!s}, not {value}: resume with the same settings"
            )
    return resumed(attrs, ranks)


def _fail(message: str) -> int:
    print(f"qvr sbc: {message}", file=sys.stderr)
    return EXIT_USAGE
