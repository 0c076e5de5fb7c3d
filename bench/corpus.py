"""How much real QVR qvr reads and runs: the shared corpus by era.

For each era of the language (../shared/corpus/MANIFEST.tsv), the files
that a quivers grammar from 0.11 on accepts (quivers' own parsers, see
tests/conformance/oracle.py), those qvr parses with no syntax error
(QVR001), those qvr checks with no error at all, and those that run
under `qvr run --method prior` (its first export, a few draws, no data
file: a model that reads data names cannot, and counts as not running). The `of 0.11+`
columns count only the files quivers 0.11+ accepts: the goal is that they
are all there. Files quivers accepts only before 0.11 (E1, E2) should get
an era diagnostic each, never a syntax error.

Then, for each export target (Stan, NumPyro, PyMC; issue #30), the files that
check whose programs all export (`qvr export --to T` writes them), those where a
program gets located QVR701 diagnostics instead, and those where exporting raised
(must be none); with `--files`, the commonest reasons each target gives.

With `--runs` (issue #26: every program in a real file checks, runs and fits)
it then runs every exported program of every 0.11+ file through `qvr run`,
one subprocess a run (`--jobs` at a time, each killed after `--timeout`
seconds): `--method prior`, a short NUTS (200 iterations, 2 chains) and a
short SVI (200 steps), with a data file written by `qvr data`
(`qvr_core.runs.synthesise`) where the program reads data names. It prints,
by era, the files that export a program, those with a runnable export and no
check error, those where prior, NUTS and SVI all finish for every exported
program, and those where a run printed a Python traceback; then each failure
with its first error line, and the failures grouped by that line.

With `--guides DIR` it also counts the constructs of the ```qvr blocks of every
markdown file under DIR (quivers' `docs/guides` in a clone of FACTSlab/quivers;
`bench/guide_blocks.py`): those quivers' doc tests compile and the fragments they
mark `compile: false`, apart.

    .venv/bin/python bench/corpus.py [--files] [--no-run] [--guides DIR]
        (--files: list each file that misses; --no-run: skip the prior column)
    .venv/bin/python bench/corpus.py --no-run --runs [--jobs N] [--timeout S] [--only TEXT]
        (the long part: about an hour at --jobs 2 on two cores)
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.constructs import census
from bench.guide_blocks import guide_blocks
from qvr_core.check import check
from qvr_core.check.module import CheckedModule
from qvr_core.export import TARGETS, export_program, exportable_programs
from qvr_core.syntax import ast
from tests.conformance import oracle
from tests.conformance.shared import CorpusFile, corpus

ERAS = ("E1", "E2", "E3", "E3'", "E4", "E5")
ROOT = Path(__file__).resolve().parents[1]
#: The runs of `--runs`: each method with the arguments of its short run.
RUNS: dict[str, tuple[str, ...]] = {
    "prior": ("--steps", "100"),
    "nuts": ("--steps", "200", "--chains", "2"),
    "svi": ("--steps", "200"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", action="store_true", help="list the files that miss a column")
    ap.add_argument("--no-run", action="store_true", help="skip the `--method prior` column")
    ap.add_argument(
        "--runs", action="store_true", help="run every exported program: prior, NUTS, SVI"
    )
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (default 1)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a run (default 600)")
    ap.add_argument("--only", default="", help="with --runs: only files whose name has this")
    ap.add_argument(
        "--guides",
        type=Path,
        help="also count the qvr blocks of the markdown files under this folder (quivers' "
        "docs/guides)",
    )
    ap.add_argument(
        "--child", nargs=3, metavar=("FILE", "PROGRAM", "METHOD"), help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    if args.child:
        return _child(*args.child)
    files = corpus()
    if not files:
        print("no corpus: ../shared/corpus not found (set QVR_SHARED)")
        return 2
    try:
        oracle.parsers()
        have_oracle = True
    except oracle.OracleUnavailable as exc:
        print(f"(quivers' parsers unavailable: {exc}; the 0.11+ columns are empty)")
        have_oracle = False
    counts: dict[str, Counter[str]] = {era: Counter() for era in ERAS}
    misses: list[str] = []
    exports: dict[str, Counter[str]] = {t: Counter() for t in TARGETS}
    reasons: dict[str, Counter[str]] = {t: Counter() for t in TARGETS}
    constructs: dict[str, Counter[str]] = defaultdict(Counter)
    for f in files:
        text = f.text()
        modern = have_oracle and oracle.modern(oracle.accepted_by(text))
        module = check(text)
        codes = [d.code for d in module.diagnostics if d.is_error]
        parsed = "QVR001" not in codes and "QVR000" not in codes
        clean = not codes
        row = counts[f.era]
        row["files"] += 1
        row["modern"] += modern
        row["parsed"] += parsed
        row["clean"] += clean
        row["modern parsed"] += modern and parsed
        row["modern clean"] += modern and clean
        if modern:
            declared = [d for d in module.ast.decls if isinstance(d, ast.ProgramDecl)]
            row["programs"] += len(declared)
            row["typed"] += sum(
                d.name.text in module.programs or d.name.text in module.models for d in declared
            )
            row["models"] += sum(d.name.text in module.models for d in declared)
            for label, checked in census(module).items():
                constructs[label]["files"] += 1
                constructs[label]["unchecked"] += not checked
                if args.files and not checked:
                    constructs[label][f.name] += 1
        if clean:
            _export(module, modern, exports, reasons)
        if clean and not args.no_run:
            why = _prior_failure(text)
            row["prior"] += why is None
            row["modern prior"] += modern and why is None
            if args.files and modern and why is not None:
                misses.append(f"{f.era:4} {f.name}: prior: {why[:110]}")
        if args.files and (not parsed or (modern and not clean)):
            first = next(d for d in module.diagnostics if d.is_error)
            where = f"{first.span.start_line + 1}:{first.span.start_col + 1}"
            misses.append(f"{f.era:4} {f.name}:{where} {first.code} {first.message[:90]}")
    columns = (
        "era",
        "files",
        "0.11+",
        "parse",
        "of 0.11+",
        "check",
        "of 0.11+",
        "prior",
        "of 0.11+",
        "typed",
    )
    widths = (5, 6, 6, 6, 9, 6, 9, 6, 9, 14)
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    total: Counter[str] = Counter()
    for era in ERAS:
        total.update(counts[era])
        _row(era, counts[era], widths)
    _row("all", total, widths)
    print(
        "0.11+: quivers 0.11 .. 0.25.2 accepts; parse: no QVR001; check: no error;"
        " prior: `qvr run --method prior` runs it; 'of 0.11+': among the 0.11+ files"
    )
    print(
        "typed: programs of the 0.11+ files the checker types (not names only, QVR011) of"
        " all their programs; in parentheses those typed as Bayesian models"
    )
    _print_exports(exports, reasons if args.files else None)
    _print_constructs(constructs, args.files)
    if args.guides is not None:
        _print_guides(args.guides, args.files)
    for line in misses:
        print(line)
    if args.runs and have_oracle:
        chosen = [f for f in files if args.only in f.name]
        _runs(chosen, max(args.jobs, 1), args.timeout)
    elif args.runs:
        print("--runs needs quivers' parsers to pick the 0.11+ files")
        return 2
    return 0


def _print_constructs(constructs: dict[str, Counter[str]], files: bool) -> None:
    """The census of quivers constructs over the 0.11+ files (bench/constructs.py)."""
    print()
    print(f"{'construct (0.11+ files)':<44} {'files':>6} {'unchecked':>10}")
    for label in sorted(constructs):
        c = constructs[label]
        print(f"{label:<44} {c['files']:>6} {c['unchecked']:>10}")
        if files:
            for name in sorted(k for k in c if k not in ("files", "unchecked")):
                print(f"{'':<6}unchecked in {name}")
    print(
        "unchecked: files where some use of the construct gets QVR011 (not checked yet);"
        " the checker types every use in the others"
    )


def _print_guides(root: Path, files: bool) -> None:
    """The census of constructs over the qvr blocks of quivers' guides under `root`:
    the blocks quivers' doc tests compile, and the fragments (`compile: false`) apart."""
    found = guide_blocks(root)
    print()
    if not found:
        print(f"no qvr blocks in the markdown files under {root}")
        return
    table: dict[str, Counter[str]] = defaultdict(Counter)
    summary: Counter[str] = Counter()
    for block in found:
        kind = "compiled" if block.compiled else "fragment"
        module = check(block.text)
        codes = {d.code for d in module.diagnostics}
        summary[kind] += 1
        summary[f"{kind} QVR011"] += "QVR011" in codes
        summary[f"{kind} error"] += any(d.is_error for d in module.diagnostics)
        for label, checked in census(module).items():
            table[label][kind] += 1
            table[label][f"{kind} unchecked"] += not checked
            if files and not checked:
                table[label][f"~{kind} {block.name}"] += 1
    print(
        f"guides under {root}: {summary['compiled']} blocks quivers compiles "
        f"({summary['compiled QVR011']} with QVR011, {summary['compiled error']} with an "
        f"error), {summary['fragment']} fragments ({summary['fragment QVR011']} with QVR011, "
        f"{summary['fragment error']} with an error)"
    )
    heads = ("compiled", "unchecked", "fragments", "unchecked")
    print(f"{'construct (guide blocks)':<44} " + " ".join(f"{h:>10}" for h in heads))
    for label in sorted(table):
        c = table[label]
        print(
            f"{label:<44} {c['compiled']:>10} {c['compiled unchecked']:>10} "
            f"{c['fragment']:>10} {c['fragment unchecked']:>10}"
        )
        for key in sorted(k for k in c if k.startswith("~")):
            print(f"{'':<6}unchecked in {key[1:]}")


def _prior_failure(text: str) -> str | None:
    """Why `qvr run --method prior` does not run the file (None: it runs)."""
    from qvr_core.inference.errors import InferenceError
    from qvr_core.runs.run import run_inference

    try:
        run_inference(text, method="prior", steps=2, batch=2, seq_len=3)
    except InferenceError as e:
        return str(e).splitlines()[0]
    except Exception as e:  # a crash is a miss too; say what it was
        return f"{type(e).__name__}: {e}".splitlines()[0]
    return None


def _row(era: str, c: Counter[str], widths: tuple[int, ...]) -> None:
    cells = (
        era,
        str(c["files"]),
        str(c["modern"]),
        str(c["parsed"]),
        f"{c['modern parsed']}/{c['modern']}",
        str(c["clean"]),
        f"{c['modern clean']}/{c['modern']}",
        str(c["prior"]),
        f"{c['modern prior']}/{c['modern']}",
        f"{c['typed']}/{c['programs']} ({c['models']})",
    )
    print(" ".join(f"{cell:>{w}}" for cell, w in zip(cells, widths, strict=True)))


# ------------------------------------------------------------------ exports


def _export(
    module: CheckedModule,
    modern: bool,
    exports: dict[str, Counter[str]],
    reasons: dict[str, Counter[str]],
) -> None:
    """Count one checked file under each target: all its programs export, or some are
    diagnosed (QVR701), or exporting raised (a bug: no input may crash an export)."""
    for name, chosen in TARGETS.items():
        outcome = "exports"
        for program in exportable_programs(module):
            try:
                out = export_program(module, chosen, program)
            except Exception as exc:  # the bench reports a crash instead of stopping
                outcome = "crashed"
                reasons[name][f"crash: {type(exc).__name__}: {exc}"[:100]] += 1
                break
            if out.text is None:
                outcome = "diagnosed"
                for d in out.diagnostics:
                    reasons[name][_masked(d.message)] += 1
        exports[name][outcome] += 1
        exports[name][f"modern {outcome}"] += modern


def _masked(message: str) -> str:
    """A reason without its names and numbers, so that like reasons count together."""
    text = re.sub(r"`[^`]*`", "`_`", message.split(": ", 1)[-1])
    return re.sub(r"\d+", "N", text)[:110]


def _print_exports(
    exports: dict[str, Counter[str]], reasons: dict[str, Counter[str]] | None
) -> None:
    print()
    print("export of the files that check (0.11+ among them in parentheses):")
    print(f"{'target':>8} {'exports':>12} {'diagnosed':>12} {'crashed':>9}")
    for name, c in exports.items():
        cells = [f"{c[k]} ({c['modern ' + k]})" for k in ("exports", "diagnosed", "crashed")]
        print(f"{TARGETS[name].title:>8} {cells[0]:>12} {cells[1]:>12} {cells[2]:>9}")
    print(
        "exports: every program of the file is written in the target; diagnosed: a program"
        " gets located QVR701 warnings instead; crashed: exporting raised (a bug)"
    )
    if reasons is None:
        return
    for name, c in reasons.items():
        print(f"\n{TARGETS[name].title}: reasons (programs), commonest first")
        for reason, n in c.most_common(12):
            print(f"{n:5}  {reason}")


# ------------------------------------------------------------------ --runs


@dataclass
class FileRuns:
    """What running one file's exported programs gave."""

    era: str
    name: str
    path: Path
    programs: list[str]
    runnable: bool  # no check error and an exported program that runs
    failures: list[tuple[str, str, str]] = field(default_factory=list)  # program, method, line
    finished: Counter[str] = field(default_factory=Counter)  # method -> programs that finished
    traceback: bool = False


def _runs(files: list[CorpusFile], jobs: int, timeout: float) -> None:
    """Run every exported program of the 0.11+ files; print the table and the failures."""
    from qvr_core.plan.runnable import program_decl, runnability

    table: list[FileRuns] = []
    work: list[tuple[FileRuns, Path, str, str]] = []
    for f in files:
        text = f.text()
        if not oracle.modern(oracle.accepted_by(text)):
            continue
        module = check(text)
        programs = [n for n in module.exports if program_decl(module, n) is not None]
        runnable = module.ok and any(runnability(module, n).ok for n in programs)
        row = FileRuns(f.era, f.name, f.path, programs, runnable)
        table.append(row)
        work += [(row, f.path, p, m) for p in programs for m in RUNS]
    started = time.perf_counter()
    print(f"running {len(work)} runs of {len(table)} files, {jobs} at a time", file=sys.stderr)

    def one(item: tuple[FileRuns, Path, str, str]) -> tuple[FileRuns, str, str, int, str]:
        row, path, program, method = item
        status, stderr = _spawn(path, program, method, timeout)
        return row, program, method, status, stderr

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for i, (row, program, method, status, stderr) in enumerate(pool.map(one, work), 1):
            row.traceback |= "Traceback" in stderr
            if status == 0:
                row.finished[method] += 1
            else:
                row.failures.append((program, method, _first_error(stderr, status, timeout)))
            spent = time.perf_counter() - started
            verdict = "ok" if status == 0 else row.failures[-1][2][:80]
            print(
                f"[{i}/{len(work)} {spent:.0f}s] {row.name} {program} {method}: {verdict}",
                file=sys.stderr,
            )
    _print_runs(table)


def _spawn(path: Path, program: str, method: str, timeout: float) -> tuple[int, str]:
    """Run this script's child mode in its own session; on timeout kill it and its chains."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(path), program, method]
    with subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,  # its own process group: the NUTS chains go with it
    ) as proc:
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, stderr = proc.communicate()
            return -1, stderr
    return proc.returncode, stderr


def _child(path: str, program: str, method: str) -> int:
    """One run as a user makes it: `qvr data` first where the program reads data names,
    then `qvr run` on that file."""
    from qvr_cli.main import main as qvr
    from qvr_core.plan.runnable import runnability
    from qvr_core.runtime.model import compile_model

    run = ["run", path, "--program", program, "--method", method, *RUNS[method]]
    module = check(Path(path).read_text(encoding="utf-8"))
    verdict = runnability(module, program) if module.ok else None
    if verdict is None or verdict.kind != "model" or not compile_model(module, program).data_names:
        return qvr(run)
    with tempfile.TemporaryDirectory(prefix="qvr-corpus-") as folder:
        data = str(Path(folder) / "data.npz")
        status = qvr(["data", path, "--program", program, "-o", data])
        return status if status else qvr([*run, "--data", data])


#: What a line of a run's progress looks like (not an error).
_PROGRESS = re.compile(r"^(svi|nuts|prior) step \d+/\d+|^\[[#.]+\]")


def _first_error(stderr: str, status: int, timeout: float) -> str:
    """The first line that says what went wrong (with the next when it ends in a colon), or
    a traceback's last line."""
    if status == -1:
        return f"timed out after {timeout:.0f} s"
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    if any(ln.startswith("Traceback") for ln in lines):
        return f"traceback: {lines[-1]}"
    for i, line in enumerate(lines):
        if _PROGRESS.match(line) or line.startswith("stopping after"):
            continue
        if line.endswith(":") and i + 1 < len(lines):
            return f"{line} {lines[i + 1]}"
        return line
    return f"exit status {status}, nothing on stderr"


def _print_runs(table: list[FileRuns]) -> None:
    columns = ("era", "0.11+", "export", "runnable", "prior", "nuts", "svi", "all 3", "traceback")
    widths = (5, 6, 7, 9, 6, 6, 6, 6, 10)
    print()
    print(" ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for era in (*ERAS, "all"):
        rows = [r for r in table if era in ("all", r.era)]
        if not rows and era != "all":
            continue
        exporting = [r for r in rows if r.programs]

        def every(r: FileRuns, *methods: str) -> bool:
            return all(r.finished[m] == len(r.programs) for m in methods)

        cells = (
            era,
            len(rows),
            len(exporting),
            sum(r.runnable for r in exporting),
            sum(every(r, "prior") for r in exporting),
            sum(every(r, "nuts") for r in exporting),
            sum(every(r, "svi") for r in exporting),
            sum(every(r, *RUNS) for r in exporting),
            sum(r.traceback for r in rows),
        )
        print(" ".join(f"{c!s:>{w}}" for c, w in zip(cells, widths, strict=True)))
    print(
        "export: files that export a program; runnable: a runnable export and no check error;"
        " prior/nuts/svi: that run finishes for every exported program; all 3: all of them;"
        " traceback: a run printed a Python traceback"
    )
    failed = [r for r in table if r.failures]
    if not failed:
        return
    runs = sum(len(r.failures) for r in failed)
    print(f"\nfailures, by file ({runs} runs of {len(failed)} files):")
    groups: dict[str, list[str]] = defaultdict(list)
    for r in failed:
        print(f"{r.era:4} {r.name}")
        for program, methods, line in _merged(r):
            print(f"       {program} {', '.join(methods)}: {line.replace(str(r.path), 'FILE')}")
            groups[_group(line, r.path, program)].append(
                f"{r.name} {program}: {', '.join(methods)}"
            )
    print("\nby first error line (paths, the program's name and numbers masked):")
    for line, where in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"{len(where):4}  {line}")
        for w in where:
            print(f"        {w}")


def _merged(r: FileRuns) -> list[tuple[str, list[str], str]]:
    """A file's failures, one entry per program and first error line, with its methods."""
    merged: dict[tuple[str, str], list[str]] = defaultdict(list)
    for program, method, line in r.failures:
        merged[(program, line)].append(method)
    return [(program, methods, line) for (program, line), methods in merged.items()]


def _group(line: str, path: Path, program: str) -> str:
    """A failure's line with what differs from file to file (paths, names, numbers) masked."""
    line = line.replace(str(path), "FILE")
    line = re.sub(rf"\b{re.escape(program)}\b", "PROGRAM", line)
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", line)


if __name__ == "__main__":
    sys.exit(main())
