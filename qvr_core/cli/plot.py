"""`qvr plot RUN.nc --kind KIND [--var NAME ...] [--coords DIM=V,V] [-o OUT] [--dpi N]`.

Draws a run saved by `qvr run --output` with ArviZ (`qvr_core.posterior.figures`)
into an SVG, PNG or PDF; without `-o`, `RUN.KIND.svg` beside the run, whose path
is printed (never written through a symbolic link there: a link is refused). The
run is sized from its headers before it is read (`qvr_core.posterior.run_files`)
and refused over the memory budget (`--memory-budget`, by default half the memory
available, as `qvr run`'s). The figure is laid out before the file is opened, so
draws no axis can hold (1e308) are said to be the draws' fault, not the output's.
Anything that stops the figure is one line on stderr and exit status 2.
matplotlib and ArviZ (the `plot` extra) are imported only when the command runs,
so `qvr check` and `qvr --help` never load them.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
import warnings
from pathlib import Path
from typing import BinaryIO

from qvr_core.cli.usage import EXIT_USAGE, one_line_errors, read_budget_argument
from qvr_core.draws import arviz_adapter
from qvr_core.draws.arviz_adapter import InferenceData
from qvr_core.posterior.figures import KINDS, FigureError, Selection, draws_problem, figure
from qvr_core.runtime.errors import first_line

SUFFIXES = (".svg", ".png", ".pdf")
#: The groups a figure draws from (its working copies are of these).
_GROUPS = ("posterior", "posterior_predictive", "observed_data", "log_likelihood", "sample_stats")
#: Bytes a number takes in the figure's working copies besides the number as read
#: (ArviZ's flattened and sorted copies, a density's grid, matplotlib's paths).
PLOT_WORKING = 32


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
    read_budget_argument(p)


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
    follow = args.output is not None
    if not follow and target.is_symlink():
        return _fail(_link_refusal(target))
    try:
        coords = _coords(args.coords)
    except ValueError as e:
        return _fail(str(e))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # arviz 0.2x announces its rewrite
            import matplotlib

            matplotlib.use("Agg")  # files only, never a window
            arviz_adapter.load()
            import matplotlib.pyplot as plt
    except ImportError:
        return _fail("plotting needs matplotlib and ArviZ: pip install 'qvr[plot]'")
    idata = _read(args.file, args.memory_budget)
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
            why = draws_problem(idata, args.kind, selection) or first_line(e)
            return _fail(f"{args.file}: ArviZ could not draw {args.kind}: {why}")
        try:
            fig.canvas.draw()  # laid out before the output is opened: a failure is the draws'
            with _opened(target, follow) as out:
                fig.savefig(out, dpi=args.dpi, format=target.suffix.lower().removeprefix("."))
        except _LinkError:
            return _fail(_link_refusal(target))
        except OSError as e:
            return _fail(f"cannot write {target}: {e.strerror or first_line(e)}")
        except Exception as e:  # matplotlib failing on the values (or the size asked for)
            why = draws_problem(idata, args.kind, selection) or first_line(e)
            return _fail(f"{args.file}: cannot draw {args.kind}: {why}")
        finally:
            plt.close(fig)
    for message in dict.fromkeys(_first_line(str(w.message)) for w in caught):
        print(f"qvr plot: warning: {message}", file=sys.stderr)
    print(target)
    return 0


class _LinkError(OSError):
    """The default output path is a symbolic link (found when it is opened)."""


def _link_refusal(target: Path) -> str:
    from qvr_core.posterior.run_files import shown_path  # numpy: only when plot runs

    return (
        f"{shown_path(target)} is a symbolic link: qvr plot does not write through one "
        "beside the run; remove it or name the output with -o"
    )


def _opened(target: Path, follow: bool) -> BinaryIO:
    """`target` opened for writing, truncated: a regular file (never a FIFO or a
    device); without `follow`, never through a symbolic link (`O_NOFOLLOW`, so a link
    made after the check above is refused too)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags, 0o666)
    except OSError as e:
        if not follow and e.errno == errno.ELOOP:
            raise _LinkError(e.errno, e.strerror) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


def _read(path: str, budget: int | None) -> InferenceData | str:
    """The run's InferenceData, or why it cannot be read (one line): sized from its
    headers first and refused over the memory `budget` (None: the default budget)."""
    from qvr_core.posterior.run_files import RunFileError, shown_path, size_run_file

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
    from qvr_core.sizing.resources import default_budget

    try:
        size = size_run_file(path, {group: PLOT_WORKING for group in _GROUPS})
        size.check(shown_path(path), budget if budget is not None else default_budget())
    except RunFileError as e:
        return str(e)
    try:
        idata = arviz_adapter.from_netcdf(path)
    except Exception as e:  # netCDF readers raise many kinds; all mean the same here
        return f"cannot read {path}: not a netCDF file of InferenceData ({first_line(e)})"
    if not arviz_adapter.groups(idata):
        return f"{path} has no InferenceData groups: plot a file written by qvr run --output"
    return idata
