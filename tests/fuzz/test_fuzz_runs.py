"""The `qvr run` fuzzer: its generators make what they claim, and a seeded slice of it
(the cases `bench/fuzz_runs.py` runs a thousand of) fails nowhere.

The slice runs 60 cases in two worker processes, each case under a timeout;
it takes well under two minutes on two cores. A failure is a traceback, an
exception escaping `main`, an internal error, a hang, a crash or a non-zero
exit without a message: the assertion lists each distinct one with the
command that repeats it (`bench/fuzz_runs.py --start N --cases 1 --keep DIR`
saves a minimised repro).
"""

from __future__ import annotations

import io
import json
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from qvr_core.builtins import FAMILIES
from qvr_core.check import check
from tests.fuzz.driver import (
    FAILURE,
    OK,
    REFUSAL,
    classify,
    exception_type,
    innermost_qvr_frame,
    run_cases,
    write_case,
)
from tests.fuzz.generators import (
    DATA_FORMATS,
    Case,
    DataPlan,
    corpus_files,
    encode_data,
    generate_program,
    make_case,
    make_data,
    mutate,
)

SLICE_SEED = 24
SLICE = 60


# ---------------------------------------------------------------- the generators


def test_cases_are_a_function_of_seed_and_index() -> None:
    for i in range(40):
        a, b = make_case(7, i), make_case(7, i)
        assert (a.program, a.args, a.origin, a.notes) == (b.program, b.args, b.origin, b.notes)
        if a.data is not None:
            assert b.data is not None and encode_data(a.data) == encode_data(b.data)
    assert make_case(7, 1).program != make_case(8, 1).program


def test_well_formed_template_programs_mostly_check() -> None:
    programs = [generate_program(random.Random(f"check:{i}")) for i in range(120)]
    assert all(p.well_formed and p.origin == "template" for p in programs)
    ok = [p for p in programs if check(p.text).ok]
    assert len(ok) >= 0.75 * len(programs), f"only {len(ok)} of {len(programs)} check"


def test_templates_draw_on_the_whole_registry() -> None:
    used: Counter[str] = Counter()
    for i in range(300):
        text = generate_program(random.Random(f"families:{i}")).text
        used.update(name for name in FAMILIES if f"{name}(" in text or f"<- {name}\n" in text)
    # a Dirac kernel has no step; the measure algebra's operators take distributions
    # (tests/conformance/test_measure_algebra.py)
    left = {n for n, f in FAMILIES.items() if f.dirac or f.measure is not None}
    missing = set(FAMILIES) - set(used) - left
    assert len(missing) <= 0.1 * len(FAMILIES), f"never generated: {sorted(missing)}"


def test_templates_use_every_kind_of_step_and_odd_sizes() -> None:
    text = "\n".join(generate_program(random.Random(f"steps:{i}")).text for i in range(300))
    for needle in ("sample", "observe", "marginalize", "let ", "score ", "[over=", "iid_over="):
        assert needle in text, needle
    assert " : FinSet 1\n" in text and " : FinSet 0\n" in text
    assert any(f"FinSet {n}" in text for n in (10**9, 2**31, 2**62, 2**63 - 1, 10**30))
    assert "via=" in text and "(spread : Real, G : FinSet)" in text


def test_data_keys_are_names_the_program_reads() -> None:
    for i in range(100):
        p = generate_program(random.Random(f"keys:{i}"))
        for key in p.keys:
            assert key.name in p.text, (key.name, p.text)


def test_right_data_holds_the_keys_and_shapes_generated() -> None:
    """A plan meant to be right holds each key with its shape, read back by numpy, torch
    and json (CSV, whose layout is qvr's, by qvr's reader: a column per key)."""
    from qvr_core.host.datafile import DataFile
    from qvr_core.runs.data import read_data

    seen: Counter[str] = Counter()
    for i in range(80):
        rng = random.Random(f"right:{i}")
        program = generate_program(rng)
        plan = make_data(rng, program, right=1.0)
        if not plan.right or not plan.arrays:
            continue
        seen[plan.fmt] += 1
        data = encode_data(plan)
        shapes = {k: tuple(np.asarray(v).shape) for k, v in plan.arrays.items()}
        assert shapes == _shapes(plan.fmt, data, plan.suffix), plan.fmt
        assert set(read_data(DataFile("data" + plan.suffix, data))) == set(plan.arrays)
    assert set(seen) == set(DATA_FORMATS)


def _shapes(fmt: str, data: bytes, suffix: str) -> dict[str, tuple[int, ...]]:
    from qvr_core.host.datafile import DataFile
    from qvr_core.runs.data import read_data

    if fmt == "npz":
        with np.load(io.BytesIO(data)) as npz:
            return {k: tuple(npz[k].shape) for k in npz.files}
    if fmt == "pt":
        import torch

        loaded = torch.load(io.BytesIO(data), weights_only=True)
        return {k: tuple(v.shape) for k, v in loaded.items()}
    if fmt == "json":
        return {k: tuple(np.asarray(v).shape) for k, v in json.loads(data).items()}
    return {k: tuple(v.shape) for k, v in read_data(DataFile("data" + suffix, data)).items()}


def test_damaged_data_covers_the_formats_and_stays_small() -> None:
    damage: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    for i in range(600):
        case = make_case(3, i)
        if case.data is None:
            continue
        data = encode_data(case.data)
        assert len(data) < 2_000_000, case.notes
        if case.data.damage is not None:
            damage[case.data.damage[0]] += 1
        notes.update(n.split(" ")[0] for n in case.data.notes)
    assert {"truncate", "flip", "huge-shape", "empty", "other-format"} <= set(damage)
    for kind in ("missing", "extra", "bytes:"):
        assert notes[kind], kind


def test_huge_declared_shapes_are_small_files() -> None:
    import torch

    from qvr_core.host.datafile import DataFile
    from qvr_core.inference.errors import InferenceError
    from qvr_core.runs.data import read_data

    for fmt in ("npz", "pt", "csv"):
        plan = DataPlan({"y": np.zeros(3)}, fmt, "." + fmt, damage=("huge-shape", 5))
        data = encode_data(plan)
        assert len(data) < 10_000
        if fmt == "npz":
            header = np.lib.format.read_array_header_1_0(
                io.BytesIO(data[data.index(b"\x93NUMPY") :][8:])
            )
            assert math.prod(header[0]) >= 2**31 or 0 in header[0]
        with pytest.raises(InferenceError):
            read_data(DataFile("data." + fmt, data))
    del torch


def test_mutations_edit_the_text_and_say_how() -> None:
    text = generate_program(random.Random("mutate")).text
    changed = 0
    for i in range(100):
        new, notes = mutate(random.Random(i), text, 1)
        assert len(notes) == 1
        changed += new != text
    assert changed >= 90


def test_real_files_are_found() -> None:
    files = corpus_files()
    assert any(f.parent.name == "models" for f in files)


def test_case_files_and_command_line(tmp_path: Path) -> None:
    case = make_case(0, 3)
    argv = write_case(case, tmp_path)
    assert argv[:2] == ["run", str(tmp_path / "model.qvr")]
    assert (tmp_path / "model.qvr").read_text(encoding="utf-8") == case.program
    if case.data is not None:
        assert argv[argv.index("--data") + 1] == str(tmp_path / str(case.data_file))


# ---------------------------------------------------------------- sorting outcomes

_TRACEBACK = """Traceback (most recent call last):
  File "/work/main/qvr_cli/main.py", line 52, in main
    return module.main(args)
  File "/work/main/qvr_core/runtime/model/program.py", line 162, in _support_name
    return float(x)
  File "/venv/lib/python3.11/site-packages/torch/_tensor.py", line 1, in item
    raise ValueError("only one element tensors")
ValueError: only one element tensors can be converted to Python scalars
"""


def _case() -> Case:
    return Case(0, 0, "template", "", None, ("--method", "prior"), True, ())


@pytest.mark.parametrize(
    ("raw", "status", "kind"),
    [
        ({"rc": 0, "stdout": "p: prior\n", "stderr": ""}, OK, OK),
        ({"rc": 1, "stderr": "qvr run: error: data.json: not JSON\n"}, REFUSAL, REFUSAL),
        ({"rc": 2, "stderr": "qvr run: error: bad --steps\n"}, REFUSAL, REFUSAL),
        ({"rc": 1, "stderr": ""}, FAILURE, "silent"),
        ({"rc": 0, "stderr": _TRACEBACK}, FAILURE, "traceback"),
        ({"rc": None, "escaped": _TRACEBACK}, FAILURE, "escaped"),
        (
            {"rc": 1, "stderr": "qvr run: error: QVR000 internal checker error (KeyError)"},
            FAILURE,
            "internal",
        ),
        (
            {"hang": True, "rc": None, "captured": 'Thread 0x1:\n  File "x.py", line 1 in f'},
            FAILURE,
            "hang",
        ),
        (
            {"crash": "signal 11 (SIGSEGV)", "rc": -11, "captured": "Fatal Python error"},
            FAILURE,
            "crash",
        ),
    ],
)
def test_classify(raw: dict[str, object], status: str, kind: str) -> None:
    outcome = classify(_case(), ["run"], raw)
    assert (outcome.status, outcome.kind) == (status, kind)
    assert bool(outcome.signature) == (status == FAILURE)


def test_a_signature_is_the_exception_and_the_innermost_qvr_frame() -> None:
    assert exception_type(_TRACEBACK) == "ValueError"
    assert innermost_qvr_frame(_TRACEBACK) == "qvr_core/runtime/model/program.py:_support_name"
    outcome = classify(_case(), ["run"], {"rc": None, "escaped": _TRACEBACK})
    assert outcome.signature == (
        "escaped: ValueError @ qvr_core/runtime/model/program.py:_support_name"
    )
    assert outcome.tail().splitlines()[-1].startswith("ValueError: only one element")
    dump = (
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f (most recent call first):\n"
        '  File "/venv/torch/x.py", line 1 in g\n'
        '  File "/a/qvr_core/x.py", line 3 in f\n'
        '  File "/a/qvr_cli/main.py", line 9 in main\n'
    )
    assert innermost_qvr_frame(dump) == "qvr_core/x.py:f"
    assert innermost_qvr_frame(dump.split("\n\n", 1)[1]) == "qvr_core/x.py:f"  # SIGUSR1's


# ---------------------------------------------------------------- the slice


def test_a_seeded_slice_of_the_fuzzer_has_no_failures(tmp_path: Path) -> None:
    cases = [make_case(SLICE_SEED, i) for i in range(SLICE)]
    outcomes = run_cases(cases, jobs=2, timeout=30.0, scratch=tmp_path)
    assert len(outcomes) == SLICE
    counts = Counter(o.status for o in outcomes)
    assert counts[OK] + counts[REFUSAL] + counts[FAILURE] == SLICE
    assert counts[OK] >= 3, counts  # the slice runs programs, not only refusals
    failures = [o for o in outcomes if o.status == FAILURE]
    report = [
        f"case {o.case.index} ({o.case.origin}): {o.signature}\n"
        f"  bench/fuzz_runs.py --seed {SLICE_SEED} --start {o.case.index} --cases 1 --keep DIR\n"
        + "\n".join(f"    {line}" for line in o.tail().splitlines())
        for o in failures
    ]
    if failures:
        pytest.fail(f"{len(failures)} of {SLICE} cases failed:\n" + "\n".join(report))
