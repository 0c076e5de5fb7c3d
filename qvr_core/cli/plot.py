"""`qvr plot RUN.nc --kind KIND [--var NAME ...] [--coords DIM=V,V] [-o OUT] [--dpi N]`.

Draws a run saved by `qvr run --output` with ArviZ (`qvr_core.posterior.figures`)
into an SVG, PNG or PDF; without `-o`, `RUN.KIND.svg` beside the run, whose path
is printed. Anything that stops the figure is one line on stderr and exit
status 2. matplotlib and ArviZ (the `plot` extra) are imported only when the
command runs, so `qvr check` and `qvr --help` never load them.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from qvr_core.cli.usage import EXIT_USAGE, one_line_errors
from qvr_core.posterior.figures import KINDS, FigureError, Selection, figure
from qvr_core.runtime.errors import first_line

SUFFIXES = (".svg", ".png", ".pdf")


def add_arguments(p: argparse.ArgumentParser) -> None:
    one_line_errors(p, "plot")
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "kinds:\n" + "\n".join(f"  {name:<9} {k.summary}" for name, k in KINDS.items())
    p.add_argument("file", metavar="RUN", help="a run written by qvr run --output RUN.nc")
    p.add_argument(
        "--kind", "-k", choices=KINDS, default="trace", metavar="KIND", help="default: trace"
    )
    p.add_argument(
        "--var",
        dest="var_names",
        metavar="NAME",
        nargs="+",
        action="extend",
        default=[],
        help="only these sites (default: all)",
    )
    p.add_argument(
        "--coords",
        metavar="DIM=V,V",
        action="append",
        default=[],
        help="only these elements of a plate, e.g. theta_dim_0=0,3 (repeatable)",
    )
    p.add_argument(
        "--combined", action="store_true", help="merge the chains (trace, forest, autocorr)"
    )
    p.add_argument(
        "-o", "--output", metavar="OUT", help="an .svg, .png or .pdf (default: RUN.KIND.svg)"
    )
    p.add_argument("--dpi", type=int, default=100, help="pixels per inch of a PNG (default: 100)")


def _fail(message: str) -> int:
    print(f"qvr plot: {message}", file=sys.stderr)
    return EXIT_USAGE


def _coords(texts: list[str]) -> dict[str, list[str]]:
    """`DIM=V,V` options as a dict; ValueError names a malformed one."""
    coords: dict[str, list[str]] = {}
    for text in texts:
        dim, sep, values = text.partition("=")
        picked = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not dim.strip() or not picked:
            raise ValueError(f"--coords {text!r}: write DIM=V,V (e.g. theta_dim_0=0,3)")
        coords.setdefault(dim.strip(), []).extend(picked)
    return coords


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else text


def output_path(run: str, kind: str, output: str | None) -> Path:
    """Where the figure goes: `output`, or `RUN.KIND.svg` beside the run."""
    return Path(output) if output else Path(run).with_suffix(f".{kind}.svg")


def main(args: argparse.Namespace) -> int:
    """Draw the figure; 0 when written, 2 with one line on stderr otherwise."""
    target = output_path(args.file, args.kind, args.output)
    if target.suffix.lower() not in SUFFIXES:
        return _fail(
            f"cannot write {target.suffix or 'a file without a suffix'}: use .svg, .png or .pdf"
        )
    if args.dpi < 1:
        return _fail(f"--dpi must be positive, not {args.dpi}")
    try:
        coords = _coords(args.coords)
    except ValueError as e:
        return _fail(str(e))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz 0.2x announces its rewrite
            import matplotlib

            matplotlib.use("Agg")  # files only, never a window
            import arviz as az
            import matplotlib.pyplot as plt
    except ImportError:
        return _fail("plotting needs matplotlib and ArviZ: pip install 'qvr[plot]'")
    idata = _read(az, args.file)
    if isinstance(idata, str):
        return _fail(idata)
    selection = Selection(tuple(args.var_names), coords, args.combined)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fig = figure(idata, args.kind, selection)
        except FigureError as e:
            return _fail(f"{args.file}: {e}")
        except Exception as e:  # ArviZ failing on data it did not expect: still one line
            return _fail(f"{args.file}: ArviZ could not draw {args.kind}: {first_line(e)}")
    for message in dict.fromkeys(_first_line(str(w.message)) for w in caught):
        print(f"qvr plot: warning: {message}", file=sys.stderr)
    try:
        fig.savefig(target, dpi=args.dpi)
    except (OSError, ValueError) as e:
        return _fail(f"cannot write {target}: {first_line(e)}")
    finally:
        plt.close(fig)
    print(target)
    return 0


def _read(az: Any, path: str) -> Any:
    """The run's InferenceData, or why it cannot be read (one line)."""
    file = Path(path)
    if not file.is_file():
        return f"cannot read {path}: " + ("not a file" if file.exists() else "no such file")
    try:
        file.open("rb").close()
    except OSError as e:
        return f"cannot read {path}: {e.strerror or e}"
    if file.suffix == ".npz":
        return (
            f"{path} holds plain arrays (qvr run writes .npz without ArviZ): "
            "pip install 'qvr[plot]' and rerun qvr run --output RUN.nc"
        )
    try:
        idata = az.from_netcdf(path)
    except Exception as e:  # netCDF readers raise many kinds; all mean the same here
        return f"cannot read {path}: not a netCDF file of InferenceData ({first_line(e)})"
    if not idata.groups():
        return f"{path} has no InferenceData groups: plot a file written by qvr run --output"
    return idata
