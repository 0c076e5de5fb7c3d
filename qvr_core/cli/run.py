"""`qvr run FILE`: fit or sample a program from the terminal.

    qvr run examples/vanilla_rnn_lm.qvr --method svi --steps 200
    qvr run model.qvr --method nuts --steps 100 --json > summary.json
    qvr run model.qvr --data data.pt

Progress goes to stderr (one updating line on a terminal, a line every tenth
of the run otherwise); the summary goes to stdout, as text or, with `--json`,
as one JSON object (NaN and infinities become null). The first Ctrl-C (or
SIGTERM) stops the run cleanly, every chain of it: the summary so far is
printed, marked partial ("stopped after N of M draws"), `--output` gets the
draws so far with the attribute `status` "partial", and the exit status is
130 (143 for SIGTERM); a second one aborts. Errors print one clear message and
exit with status 1; an `--output` that cannot be written is refused before the
run starts (exit status 2).

torch is imported only when the command runs, so `qvr --help` stays fast.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import signal
import stat
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from qvr_core.cli.fit_table import format_table
from qvr_core.cli.usage import EXIT_USAGE, missing_extra, one_line_errors
from qvr_core.host.extras import RUN_MODULES
from qvr_core.host.files import UnreadableFile, command_line_roots, kind_of, read_text
from qvr_core.plan.run_arguments import (
    DEVICES,
    ENGINES,
    GUIDES,
    INITS,
    MASS_MATRICES,
    METHODS,
    RunArgumentError,
    RunArguments,
    asked_to_join,
    validate_run_arguments,
)
from qvr_core.runtime.errors import first_line

if TYPE_CHECKING:
    from qvr_core.runs.summary import RunSummary

EXIT_INTERRUPTED = 130  # 128 + SIGINT
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The summary names the target acceptance only where it is not the default (Stan's)
STAN_TARGET = RunArguments().target_accept


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the `qvr run` options on `parser`.

    Values are checked by `validate_run_arguments` (the server's check too),
    so an argument out of range is one line and exit status 2, never a traceback.
    """
    d = RunArguments()
    one_line_errors(parser, "run")
    parser.add_argument("file", help="the .qvr source file")
    parser.add_argument("--program", help="the exported program to run (default: the first)")
    parser.add_argument("--method", default=d.method, help=f"{', '.join(METHODS)}; default svi")
    parser.add_argument(
        "--steps",
        type=_field("steps"),
        default=d.steps,
        help="SVI steps, NUTS iterations or prior draws",
    )
    parser.add_argument("--lr", type=_field("lr"), default=d.lr, help="Adam learning rate (svi)")
    parser.add_argument("--seed", type=_field("seed"), default=d.seed, help="0 to 2**63-1")
    parser.add_argument("--batch", type=_field("batch"), default=d.batch, help="synthetic batch")
    parser.add_argument(
        "--seq-len", type=_field("seq_len"), default=d.seq_len, help="synthetic sequence length"
    )
    parser.add_argument(
        "--guide",
        default=d.guide,
        help=f"SVI guide: {', '.join(GUIDES)} (delta is MAP); default normal",
    )
    parser.add_argument(
        "--max-tree-depth",
        type=_field("max_tree_depth"),
        default=d.max_tree_depth,
        help="NUTS: at most 2**depth leapfrog steps per draw; default 10 (Stan's)",
    )
    parser.add_argument(
        "--target-accept",
        type=_field("target_accept"),
        default=d.target_accept,
        help="NUTS: the acceptance warmup tunes the step size to; default 0.8 (Stan's"
        " adapt_delta); 0.9 or 0.95 takes smaller steps where draws diverge",
    )
    parser.add_argument(
        "--chains",
        type=_field("chains"),
        default=d.chains,
        help="NUTS chains, advanced together (split over processes for slow models); default 4",
    )
    parser.add_argument(
        "--mass-matrix",
        choices=MASS_MATRICES,
        default=d.mass_matrix,
        help="NUTS: the metric warmup adapts: auto (the default: low-rank up to 500"
        " coordinates, fisher beyond), fisher (nutpie's diagonal from the draws and their"
        " gradients), low-rank (fisher plus the most correlated directions), diag (Stan's"
        " draw variances) or dense (Stan's covariance: a matrix product per leapfrog step)",
    )
    parser.add_argument(
        "--init",
        choices=INITS,
        default=d.init,
        help="NUTS: where the chains start: pathfinder (the default: draws of multi-path"
        " Pathfinder begun from the program's forward draws) or prior (those forward draws)",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default=d.engine,
        help="NUTS: what samples: auto (the default: qvr's sampler; where its trees would"
        " cost the draws more than 20 s of its own Python and numpyro is installed,"
        " NumPyro's NUTS takes the draws on after warmup, with qvr's metric and step"
        " size), qvr (qvr's sampler throughout) or numpyro (NumPyro's NUTS, compiled by"
        " JAX, on the program's NumPyro export: Stan's diag or dense metric, chains"
        " started uniformly in (-2, 2) as Stan does, or at forward draws with --init"
        " prior; needs numpyro and jax installed)",
    )
    parser.add_argument(
        "--subsample",
        metavar="PLATE=ROWS",
        help="SVI: score ROWS random rows of PLATE per step, scaled to the whole plate"
        " (minibatch SVI, e.g. Row=256)",
    )
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default=d.device,
        help="where the run computes: cpu (the default), cuda, or auto (a GPU when one is"
        " present and the run is large enough to gain)",
    )
    parser.add_argument(
        "--data",
        help="a .pt, .npz, .csv or .json file: x and the observed sites (a model program:"
        " its data names and observed sites)",
    )
    parser.add_argument(
        "--memory-budget",
        help="refuse a run estimated to need more (e.g. 4GB; default: half the available memory)",
    )
    parser.add_argument(
        "--output",
        help="write the draws (ArviZ InferenceData in netCDF with the arviz extra, else .npz)",
    )
    parser.add_argument(
        "--predictive",
        action="store_true",
        help="with --output: draw the observed sites again under each posterior draw",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def _field(key: str) -> Any:
    """An argparse type that converts one value as `validate_run_arguments` does."""

    def convert(text: str) -> Any:
        try:
            return getattr(validate_run_arguments({key: text}, text=True), key)
        except RunArgumentError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = key
    return convert


def validated(args: argparse.Namespace) -> RunArguments:
    """All of `qvr run`'s run arguments, checked together."""
    return validate_run_arguments(
        {
            "program": args.program,
            "method": args.method,
            "steps": args.steps,
            "lr": args.lr,
            "seed": args.seed,
            "batch": args.batch,
            "seq_len": args.seq_len,
            "chains": getattr(args, "chains", None),
            "mass_matrix": getattr(args, "mass_matrix", None),
            "init": getattr(args, "init", None),
            "engine": getattr(args, "engine", None),
            "guide": getattr(args, "guide", None),
            "max_tree_depth": getattr(args, "max_tree_depth", None),
            "target_accept": getattr(args, "target_accept", None),
            "data": args.data,
            "memory_budget": getattr(args, "memory_budget", None),
            "subsample": getattr(args, "subsample", None),
            "device": getattr(args, "device", None),
        },
        text=True,
    )


class ProgressLine:
    """Progress on stderr: a rewritten line on a terminal, periodic lines otherwise."""

    def __init__(self, method: str, stream: TextIO | None = None) -> None:
        self.method = method
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start: float | None = None  # set at the first report: compiling is not a step
        self.last_draw = 0.0
        self.width = 0
        self.draws = ""  # a NUTS run's draws per chain and worst R-hat so far

    def update(self, live: dict[str, Any]) -> None:
        """A NUTS run's draws so far (`qvr_core.inference.live`): shown after the step."""
        sites = (live.get("posterior") or {}).get("sites", {}).values()
        worst = [v for s in sites if isinstance(v := s.get("r_hat_max"), float) and v == v]
        self.draws = f"  draws/chain {','.join(str(n) for n in live['draws'])}" + (
            f"  r_hat max {max(worst):.3f}" if worst else ""
        )

    def __call__(self, step: int, total: int, loss: float) -> None:
        now = time.perf_counter()
        if self.start is None:
            self.start, self.first = now, step
        done = step - self.first
        rate = done / (now - self.start) if done else math.nan
        label = "loss" if self.method == "svi" else "-log p"
        text = (
            f"{self.method} step {step}/{total}  {label} {loss:.4g}  "
            f"{_fmt(rate, '.1f')} steps/s{self.draws}"
        )
        if self.tty:
            if step < total and now - self.last_draw < 0.1:
                return
            self.last_draw = now
            filled = int(20 * step / max(total, 1))
            line = f"[{'#' * filled}{'.' * (20 - filled)}] {text}"
            self.stream.write("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            every = max(1, total // 10)
            if step % every and step != total:
                return
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _fmt(v: Any, spec: str = ".4g") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return format(v, spec)


def _chains(n: int) -> str:
    return f"{n} chain" if n == 1 else f"{n} chains"


def format_summary(s: RunSummary, requested: int | None = None) -> str:
    """The human-readable summary printed at the end of a run (`requested`: the steps the
    run was asked for, which a stopped run names: "stopped after N of M draws")."""
    lines = [
        f"{s.program}: {s.method} on {s.data} data (batch {s.batch}), "
        f"{s.steps} steps in {s.seconds:.2f} s ({_fmt(s.steps_per_second, '.1f')} steps/s)"
        + ("  [stopped]" if s.stopped else "")
    ]
    if s.stopped and requested is not None:
        from qvr_core.runs.summary import stopped_after

        lines.append(f"  partial: {stopped_after(s, requested)}")
    posterior = s.posterior.to_dict() if s.posterior is not None else None
    if s.svi is not None:
        lines.append(
            f"  loss: {_fmt(s.initial_loss)} -> {_fmt(s.final_loss)} (-ELBO, guide {s.svi.guide})"
        )
        if s.svi.subsample is not None:
            plate, rows = s.svi.subsample
            lines.append(
                f"  subsample: {rows:,} rows of {plate} per step, scaled to the whole plate;"
                f" -ELBO sd {_fmt(s.svi.elbo_sd)} over {s.svi.elbo_evaluations} evaluations"
            )
        if s.svi.processes > 1:
            lines.append(f"  each step shared by {s.svi.processes} processes (torch.distributed)")
        if posterior is not None:
            lines.append(f"  posterior from {posterior['draws']} draws of the guide:")
            lines.extend(format_table(posterior))
    elif s.nuts is not None:
        n = s.nuts
        lines.append(
            f"  {_chains(n.chains)} x (warmup {n.num_warmup}, draws {n.num_samples}), "
            f"acceptance {_fmt(n.acceptance, '.2f')}"
            + (f" (target {n.target_accept:g})" if n.target_accept != STAN_TARGET else "")
            + f", divergences {n.divergences}, "
            f"step size {_fmt(n.step_size, '.3g')}"
            + ("" if n.mass_matrix == "diag" else f", {n.mass_matrix} mass matrix")
            + (", Pathfinder starts" if n.starts == "pathfinder" else "")
            + (", NumPyro's NUTS" if n.engine == "numpyro" else "")
            + (", draws by NumPyro's NUTS" if n.engine == "qvr+numpyro" else "")
        )
        lines.append(
            f"  r_hat max {_fmt(n.r_hat_max, '.3f')}, ess_bulk min {_fmt(n.ess_min, '.1f')}"
        )
        if posterior is not None:
            lines.extend(format_table(posterior))
    for site, d in (s.sites or {}).items():
        shape = "x".join(str(n) for n in d.shape) or "scalar"
        if d.most_frequent is None:
            desc = f"mean {d.mean:.4g}, sd {d.sd:.4g}, range [{d.min:.4g}, {d.max:.4g}]"
        else:
            desc = "most frequent " + ", ".join(
                f"{m.value} ({m.fraction:.0%})" for m in d.most_frequent
            )
        lines.append(f"  {d.kind} {site} ({d.support}, {shape}): {desc}")
    if s.redrawn:
        lines.append(
            f"  {s.redrawn} forward run{'s' if s.redrawn > 1 else ''} drawn again: "
            "their numbers left float64 (the draws above are the prior given that they fit)"
        )
    if s.attention:
        count = len(s.attention)
        lines.append(
            f"  attention weights of the first example recorded for {count} attention"
            f"{'s' if count > 1 else ''} ({s.attention[0].basis}): in --json, --output and "
            "the editor's run view"
        )
    return "\n".join(lines)


class _StopOnSignal:
    """The first Ctrl-C (SIGINT) or SIGTERM asks the run to stop; a second one aborts.

    `signum` is the first one's, for the exit status (128 + its number). The chain
    processes get a terminal's Ctrl-C too and leave it to this process (see
    `qvr_core.inference.chains`).
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> _StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.event.is_set():
            raise KeyboardInterrupt
        self.signum = signum
        self.event.set()
        again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        sys.stderr.write(f"\nstopping after this step ({again} again to abort)\n")
        sys.stderr.flush()

    @property
    def exit_status(self) -> int:
        """128 + the signal that stopped the run (130 when none did)."""
        return EXIT_INTERRUPTED if self.signum is None else 128 + self.signum

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous)
        self.previous = {}


def check_output(path: str) -> str | None:
    """Why `--output path` cannot be written, or None: checked before the run starts, so a
    long run does not end in "cannot write". The file written may have `.npz` for a
    suffix (`RunResults.destination`)."""
    from qvr_core.inference.results import RunResults

    if not path or path.endswith(os.sep):
        return f"{path or 'an empty path'} names a folder, not a file"
    target = RunResults.destination(path)
    shown = str(target) if str(target) != path else path
    try:
        status = os.stat(target)
    except FileNotFoundError:
        status = None
    except OSError as e:
        return f"{shown}: {e.strerror or e}"
    if status is not None:
        if stat.S_ISDIR(status.st_mode):
            return f"{shown} is a folder, not a file"
        if not stat.S_ISREG(status.st_mode):
            return f"{shown} is {kind_of(status.st_mode)}, not a regular file"
        if not os.access(target, os.W_OK):
            return f"{shown} is not writable"
    folder = os.path.dirname(os.path.realpath(target)) or "."
    if not os.path.isdir(folder):
        return f"{shown}: the folder {os.path.dirname(str(target)) or '.'} does not exist"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{shown}: the folder {folder} is not writable"
    return None


def main(args: argparse.Namespace) -> int:
    """Run `args.file`; print progress and the summary. Returns the exit status."""
    missing = missing_extra("run", RUN_MODULES, "run")
    if missing is not None:
        return missing
    if asked_to_join(os.environ):  # before torch is imported: one line, not torch's
        # warnings with a C++ backtrace, when another process of the run ends first
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    try:
        run_args = validated(args)
    except RunArgumentError as e:
        print(f"qvr run: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if run_args.device != "cpu":  # `--device cuda` without a GPU: one line, nothing compiled
        from qvr_core.runs.device import check_device

        refused = check_device(run_args.device)
        if refused is not None:
            print(f"qvr run: error: {refused}", file=sys.stderr)
            return EXIT_USAGE
    output = getattr(args, "output", None)
    if output is not None:
        why = check_output(str(output))
        if why is not None:
            print(f"qvr run: error: --output {why}", file=sys.stderr)
            return EXIT_USAGE
    try:
        source = read_text(args.file, command_line_roots(args.file), universal_newlines=True)
    except UnreadableFile as e:
        print(f"qvr run: cannot read {args.file}: {e.reason}", file=sys.stderr)
        return 1
    with _StopOnSignal() as stop:  # from here to the file written: a signal stops, not kills
        try:
            return _run(args, run_args, source, stop)
        except KeyboardInterrupt:  # a second signal
            print("qvr run: aborted", file=sys.stderr)
            return stop.exit_status


def unexpected(e: BaseException) -> str:
    """The line for an error no part of the run turned into the user's words: a bug of
    qvr's (or torch failing where qvr did not expect it) to report, with its first line,
    which says more than the traceback's last frames to whoever reads the report."""
    if isinstance(e, MemoryError):
        return "error: the run ran out of memory (give it less data, or a smaller --batch)"
    return (
        f"internal error: {type(e).__name__}: {first_line(e)} "
        "(please report it with the .qvr file and the command)"
    )


def _run(args: argparse.Namespace, run_args: RunArguments, source: str, stop: _StopOnSignal) -> int:
    from qvr_core.inference.errors import InferenceError, NonFiniteLossError
    from qvr_core.inference.results import RunResults
    from qvr_core.runs.run import run_program

    output = getattr(args, "output", None)
    results = RunResults() if output else None
    from qvr_core.runs.distributed import reporting
    from qvr_core.runs.rendezvous import Interrupted

    first = reporting()  # under `torchrun` every rank runs this (docs/distributed.md)
    progress = ProgressLine(run_args.method, None if first else io.StringIO())
    try:
        summary = run_program(
            source,
            path=args.file,
            data=run_args.data,
            **run_args.job_arguments(),
            on_progress=progress,
            on_update=progress.update,
            should_stop=stop.event.is_set,
            results=results,
            predictive=bool(getattr(args, "predictive", False)),
        )
    except NonFiniteLossError as e:
        progress.finish()
        print(f"qvr run: {e}", file=sys.stderr)
        partial = getattr(e, "summary", None)
        if args.json and partial is not None:
            print(json.dumps(_json_safe({**partial, "error": str(e)})))
        return 1
    except Interrupted as e:  # while waiting for the other processes of a distributed run
        progress.finish()
        print(f"qvr run: {e}", file=sys.stderr)
        return 128 + e.signum if e.signum is not None else stop.exit_status
    except InferenceError as e:
        progress.finish()
        print(f"qvr run: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # qvr's own bug: still one line, never a traceback
        progress.finish()
        print(f"qvr run: {unexpected(e)}", file=sys.stderr)
        return 1
    finally:
        progress.finish()  # the line ends before anything else is printed
    if not first:
        return 0
    if args.json:
        print(json.dumps(_json_safe(summary.to_json())))
    else:
        print(format_summary(summary, run_args.steps))
    sys.stdout.flush()
    if results is not None:  # `run_program` marked it partial or complete
        try:
            written = results.write(str(output))
        except (OSError, ValueError) as e:
            print(f"qvr run: cannot write {output}: {e}", file=sys.stderr)
            return 1
        kind = "InferenceData (netCDF)" if written.suffix != ".npz" else "arrays (.npz)"
        partial = ", partial" if summary.stopped else ""
        print(f"qvr run: wrote {kind}{partial} to {written}", file=sys.stderr)
    if stop.signum is not None:
        return stop.exit_status
    return EXIT_INTERRUPTED if summary.stopped else 0


if __name__ == "__main__":  # pragma: no cover - `python -m qvr_core.cli.run FILE`
    _parser = argparse.ArgumentParser(prog="qvr run", description=__doc__.split("\n")[0])
    add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))
