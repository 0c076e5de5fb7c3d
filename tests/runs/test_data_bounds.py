"""Data read in a bounded way, shapes checked exactly (issue #24).

A data file is sized before its values are decoded (`.npz` and `.pt` from their
headers and records, CSV and JSON from their separators) and refused in one
line when reading it would not fit the memory budget; a model's data must have
exactly the shape of the plates its step writes; whatever the file holds that a
message quotes (keys, header cells, file names) is printable and forms no link.
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import subprocess
import sys
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib import format as npy

from qvr_core.host.datafile import DataFile, printable, quoted, read_file
from qvr_core.inference.errors import InferenceError, RunTooLargeError
from qvr_core.plan.run_arguments import RunArguments
from qvr_core.runs.data import read_data
from qvr_core.runs.data_sizes import csv_header_cells, csv_need, json_need
from qvr_core.runs.prepare import prepare
from tests.conftest import EXAMPLES
from tests.resources.hostile import SMALL
from tests.runs.cli import qvr_runs

ROOT = Path(__file__).resolve().parents[2]
SCHOOLS = EXAMPLES / "models" / "eight_schools_noncentered.qvr"
MIB = 1 << 20
GIB = 1 << 30
#: VS Code's notification link syntax (`vs/base/common/linkedText.ts`).
LINK = re.compile(r"\[([^\]]+)\]\(((?:https?://|command:|file:)[^)\s]+)")


# ------------------------------------------------------------------ helpers


def _zip(members: list[tuple[str, bytes, int, int]]) -> bytes:
    """A zip archive of raw deflate streams: (name, stream, crc32, uncompressed size)."""
    out, central = io.BytesIO(), io.BytesIO()
    for name, stream, crc, size in members:
        offset = out.tell()
        encoded = name.encode()
        out.write(
            struct.pack(
                "<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(stream), size, len(encoded), 0
            )
        )
        out.write(encoded + stream)
        central.write(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                8,
                0,
                0,
                crc,
                len(stream),
                size,
                len(encoded),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + encoded
        )
    start = out.tell()
    out.write(central.getvalue())
    count = len(members)
    out.write(
        struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central.getvalue()), start, 0)
    )
    return out.getvalue()


def _member(name: str, raw: bytes) -> tuple[str, bytes, int, int]:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return name, c.compress(raw) + c.flush(), zlib.crc32(raw), len(raw)


def npz_bomb(path: Path, nbytes: int = GIB) -> Path:
    """An `.npz` whose `y` is `nbytes` of float64 zeros, about a thousandth of that on
    disk, written without ever holding the zeros: one compressed MiB repeated."""
    header = io.BytesIO()
    npy.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (nbytes // 8,)}
    )
    head = header.getvalue()
    first = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = [first.compress(head) + first.flush(zlib.Z_FULL_FLUSH)]
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(MIB)
    stream.append(block.compress(zeros) + block.flush(zlib.Z_FULL_FLUSH))
    crc = zlib.crc32(head)
    for _ in range(nbytes // MIB):
        crc = zlib.crc32(zeros, crc)
    body = stream[0] + stream[1] * (nbytes // MIB) + zlib.compressobj(9, zlib.DEFLATED, -15).flush()
    sigma = io.BytesIO()
    npy.write_array(sigma, np.ones(8))
    path.write_bytes(
        _zip([("y.npy", body, crc, len(head) + nbytes), _member("sigma.npy", sigma.getvalue())])
    )
    return path


#: Runs a command and prints its exit status, stderr and peak RSS (its own children only).
MEASURE = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"rc": done.returncode, "stderr": done.stderr, "peak": peak}))
"""


def qvr_run_measured(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "qvr_cli", "run", *args]
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *command],
        capture_output=True,
        text=True,
        timeout=280,
        env=env,
        cwd=ROOT,
        check=True,
    )
    return json.loads(done.stdout)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def arguments(**given: object) -> RunArguments:
    return RunArguments(**given)  # type: ignore[arg-type]


def schools(data: object, **given: object) -> None:
    prepare(SCHOOLS.read_text(encoding="utf-8"), arguments(**given), data=data)  # type: ignore[arg-type]


def pt_bytes(tensors: dict[str, torch.Tensor], **kwargs: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(tensors, buffer, **kwargs)  # type: ignore[arg-type]
    return buffer.getvalue()


# ------------------------------------------------------------------ the npz bomb


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npz_bomb(tmp_path_factory.mktemp("bomb") / "bomb.npz")


def test_the_bomb_is_a_small_file_of_a_gib_array(bomb: Path) -> None:
    assert bomb.stat().st_size < 2 * MIB
    with zipfile.ZipFile(bomb) as archive, archive.open("y.npy") as f:
        npy.read_magic(f)
        shape, _, dtype = npy.read_array_header_1_0(f)
        assert shape == (GIB // 8,) and dtype == np.float64
        assert f.read(MIB) == bytes(MIB)  # a valid stream of zeros


def test_the_npz_bomb_is_refused_in_one_line_within_a_gib_of_peak_memory(bomb: Path) -> None:
    done = qvr_run_measured(str(SCHOOLS), "--data", str(bomb), "--memory-budget", "256MB")
    assert done["rc"] == 1, done["stderr"]
    line = one_line(done["stderr"])
    assert "'y'" in line and "memory budget" in line and "134,217,728" in line
    assert done["peak"] < GIB, done


@pytest.mark.slow
def test_the_npz_bomb_at_the_default_budget_is_refused_by_size_or_by_shape(bomb: Path) -> None:
    done = qvr_run_measured(str(SCHOOLS), "--data", str(bomb), "--steps", "2")
    assert done["rc"] == 1, done["stderr"]
    line = one_line(done["stderr"])
    assert "'y'" in line
    assert "memory budget" in line or "needs (8,)" in line


def test_a_bomb_within_the_budget_that_cannot_fit_is_refused_by_its_header(bomb: Path) -> None:
    """A budget the gigabyte fits in: the header's shape is refused against the plate of
    eight schools before any value is decoded (it was read whole, then refused)."""
    tracemalloc.start()
    try:
        with pytest.raises(InferenceError, match=r"'y' has shape \(134217728,\) but .* \(8,\)"):
            prepare(SCHOOLS.read_text(encoding="utf-8"), arguments(steps=2), data=bomb,
                    memory_budget=16 * GIB)  # fmt: skip
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * MIB


def test_the_bomb_is_refused_before_a_value_is_decoded(bomb: Path) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(RunTooLargeError, match=r"'y': 134,217,728 float64 numbers"):
            read_data(bomb, budget=256 * MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * MIB


def test_a_file_over_the_budget_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("wb") as f:
        f.truncate(3 * MIB)
    with pytest.raises(InferenceError, match=r"over the memory budget of 2\.1 MB"):
        read_data(path, budget=2 * MIB)
    with pytest.raises(ValueError, match="over the memory budget"):
        read_file(path, budget=2 * MIB)


# ------------------------------------------------------------------ sizes from headers


def test_an_npz_member_that_is_not_an_array_is_refused_unread() -> None:
    content = _zip([_member("notes.txt", bytes(4 * MIB)), _member("y.npy", b"")])
    with pytest.raises(InferenceError, match=r"'notes.txt' is not an array"):
        read_data(DataFile("d.npz", content))


def test_an_npz_object_array_is_refused_from_its_header() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, x=np.array([{"a": 1}, None], dtype=object))
    with pytest.raises(InferenceError, match=r"cannot read d\.npz: 'x' holds Python objects"):
        read_data(DataFile("d.npz", buffer.getvalue()))


def test_npz_arrays_in_any_order_and_byte_order_are_read_as_saved() -> None:
    a = np.arange(12, dtype=">f8").reshape(3, 4)
    b = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    c = np.array([1, 2, 60000], dtype=np.uint16)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, a=a, b=b, c=c, d=np.zeros((0, 3)))
    arrays = read_data(DataFile("d.npz", buffer.getvalue()))
    assert torch.equal(arrays["a"], torch.arange(12, dtype=torch.float64).reshape(3, 4))
    assert torch.equal(arrays["b"], torch.arange(6, dtype=torch.int32).reshape(2, 3))
    assert arrays["c"].dtype == torch.int64 and arrays["c"].tolist() == [1, 2, 60000]
    assert arrays["d"].shape == (0, 3)


def test_an_npz_member_shorter_than_its_header_is_one_error() -> None:
    header = io.BytesIO()
    npy.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (100,)})
    content = _zip([_member("y.npy", header.getvalue() + bytes(80))])
    with pytest.raises(InferenceError, match=r"'y' ends after 80 of the 800 bytes"):
        read_data(DataFile("d.npz", content))


def test_a_pt_view_of_more_numbers_than_its_storage_is_sized_by_its_numbers() -> None:
    content = pt_bytes({"y": torch.zeros(1).expand(GIB // 8)})
    assert len(content) < 4096
    with pytest.raises(RunTooLargeError, match=r"'y': 134,217,728 float32 numbers"):
        read_data(DataFile("d.pt", content), budget=256 * MIB)


def test_pt_records_over_the_budget_are_refused_before_loading() -> None:
    content = pt_bytes({"y": torch.zeros(4 * MIB)})
    with pytest.raises(RunTooLargeError, match=r"records of 16\.\d MB"):
        read_data(DataFile("d.pt", content), budget=24 * MIB)


@pytest.mark.parametrize(
    ("tensors", "message"),
    [
        ({"y": torch.empty(8, device="meta")}, r"'y' is a meta tensor, a shape without values"),
        ({"y": torch.zeros(8).to(torch.float8_e4m3fn)}, r"'y' holds float8_e4m3fn values"),
        ({"y": torch.zeros(8).to(torch.float8_e5m2)}, r"'y' holds float8_e5m2 values"),
        ({"y": torch.zeros(8, dtype=torch.uint16)}, r"'y' holds uint16 values"),
    ],
)
def test_pt_tensors_without_usable_values_are_one_line(tensors: dict, message: str) -> None:
    with pytest.raises(InferenceError, match=message) as info:
        read_data(DataFile("d.pt", pt_bytes(tensors)))
    assert "\n" not in str(info.value)


def test_a_legacy_pt_is_refused_in_one_line() -> None:
    content = pt_bytes({"y": torch.zeros(8)}, _use_new_zipfile_serialization=False)
    with pytest.raises(InferenceError, match=r"not a torch\.save archive"):
        read_data(DataFile("d.pt", content))


@pytest.mark.parametrize("suffix", [".pt", ".npz", ".json", ".csv"])
def test_an_empty_batch_is_one_line_for_a_seed_program(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"empty{suffix}"
    x, nxt = np.zeros((0, 8), dtype=np.int64), np.zeros(0, dtype=np.int64)
    if suffix == ".pt":
        path.write_bytes(pt_bytes({"x": torch.from_numpy(x), "next": torch.from_numpy(nxt)}))
    elif suffix == ".npz":
        np.savez(path, x=x, next=nxt)
    elif suffix == ".json":
        path.write_text('{"x": [], "next": []}')
    else:
        path.write_text(",".join([*(f"x[{i}]" for i in range(8)), "next"]) + "\n")
    with pytest.raises(InferenceError, match="holds no examples"):
        prepare(SMALL, arguments(steps=2), data=path)


def test_the_pt_shapes_that_gave_tracebacks_are_one_line_on_the_command_line(
    tmp_path: Path,
) -> None:
    model = tmp_path / "lm.qvr"
    model.write_text(SMALL)
    cases = {
        "meta.pt": {"x": torch.empty(4, 8, device="meta"), "next": torch.zeros(4)},
        "f8.pt": {"x": torch.zeros(4, 8).to(torch.float8_e4m3fn), "next": torch.zeros(4)},
        "empty.pt": {"x": torch.zeros(0, 8, dtype=torch.long), "next": torch.zeros(0)},
    }
    for name, tensors in cases.items():
        (tmp_path / name).write_bytes(pt_bytes(tensors))
    # each a `qvr run` process of its own, forked after torch is imported (`qvr_runs`)
    runs = qvr_runs([[str(model), "--steps", "2", "--data", str(tmp_path / n)] for n in cases])
    for done in runs:
        assert done.returncode == 1, done.stderr
        assert "error:" in one_line(done.stderr)


# ------------------------------------------------------------------ text formats


def test_csv_and_json_sizes_bound_what_parsing_makes() -> None:
    rows = "\n".join(",".join(["0.5"] * 10) for _ in range(1000))
    need = csv_need(f"{','.join(f'x[{i}]' for i in range(10))}\n{rows}\n".encode())
    assert 10_000 <= int(need.what.split()[2].replace(",", "")) <= 10_100
    assert csv_header_cells(b'"x[0,1]","x[1,1]"\r\n1,2') == 4  # an upper bound
    assert csv_header_cells(b'"a\nb",c\n1,2\n') == 2  # a quoted line break is inside
    nested = json_need(b'{"y": [[1, 2], [3, 4]], "s": "ab"}')
    assert "up to 6 numbers" in nested.what  # 4, and the object and its outer array


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("d.json", "[" + ",".join(["0"] * 400_000) + "]"),
        ("d.json", "[" + ",".join(["{}"] * 200_000) + "]"),
        ("d.csv", "x\n" + "0\n" * 400_000),
        ("d.csv", ",".join(["x"] * 400_000) + "\n"),
    ],
)
def test_text_over_the_budget_is_refused_before_it_is_parsed(name: str, text: str) -> None:
    content = text.encode()
    tracemalloc.start()
    try:
        with pytest.raises(RunTooLargeError, match="memory budget"):
            read_data(DataFile(name, content), budget=4 * len(content))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(content) // 4 + MIB  # counted, not parsed


def test_a_csv_is_read_a_row_at_a_time_with_its_columns_in_place() -> None:
    header = '"x[1,0]","x[0,0]",next,"x[0,1]","x[1,1]"'
    body = "1,0,7,0.5,1.5\r\n\r\n ,  \r\n2,1,8,1.5,2.5\r\n"
    arrays = read_data(DataFile("d.csv", ("\ufeff" + header + "\r\n" + body).encode()))
    assert arrays["x"].tolist() == [[[0.0, 0.5], [1.0, 1.5]], [[1.0, 1.5], [2.0, 2.5]]]
    assert arrays["next"].tolist() == [7.0, 8.0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x[0],x[0],x[2]\n1,2,3\n", r"column 'x\[0\]' appears twice"),
        ("x[0],x[2]\n1,2\n", r"'x' needs 3 columns for shape \(3,\)"),
        ("x,y\n1,2\n3\n", r"line 3 has 1 cells; the header names 2 columns"),
        ("x,y\n1,oops\n", r"line 2, column 'y': 'oops' is not a number"),
        ("x\n" + "1" + ",0" * 100 + "\n", r"line 2 has more than 18 cells"),
    ],
)
def test_csv_errors_name_the_line_and_the_column(text: str, message: str) -> None:
    with pytest.raises(InferenceError, match=message):
        read_data(DataFile("d.csv", text.encode()))


# ------------------------------------------------------------------ exact shapes


def json_data(tmp_path: Path, values: dict) -> Path:
    path = tmp_path / "schools.json"
    path.write_text(json.dumps(values))
    return path


def test_y_with_an_extra_axis_is_refused_naming_y_and_the_plates_shape(tmp_path: Path) -> None:
    data = json_data(tmp_path, {"y": [[1.0] * 8] * 5, "sigma": [[2.0] * 8] * 5})
    with pytest.raises(InferenceError) as info:
        schools(data)
    assert "data 'y' has shape (5, 8) but observe y : School (line 17) needs (8,)" in str(
        info.value
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"y": [1.0] * 8, "sigma": [[2.0] * 8] * 5}, r"data 'sigma' has shape \(5, 8\)"),
        ({"y": [1.0] * 40, "sigma": [2.0] * 40}, r"data 'y' has shape \(40,\)"),
        ({"y": [[1.0]] * 8, "sigma": [2.0] * 8}, r"data 'y' has shape \(8, 1\)"),
        ({"y": 1.0, "sigma": [2.0] * 8}, r"data 'y' has shape \(\) but .* needs \(8,\)"),
    ],
)
def test_a_shape_that_would_reshape_the_plate_is_refused(
    tmp_path: Path, values: dict, message: str
) -> None:
    with pytest.raises(InferenceError, match=message):
        schools(json_data(tmp_path, values))


def test_a_data_name_that_broadcasts_to_the_plate_is_fine(tmp_path: Path) -> None:
    schools(json_data(tmp_path, {"y": [1.0] * 8, "sigma": 2.0}), method="prior")
    schools(json_data(tmp_path, {"y": [1.0] * 8, "sigma": [2.0]}), method="prior")


@pytest.mark.parametrize(
    "name",
    [
        "eight_schools_noncentered",
        "eight_schools_centered",
        "linear_regression",
        "hmm",
        "gaussian_mixture",
        "hierarchical_logistic",
    ],
)
def test_the_example_data_still_fits_its_models(name: str) -> None:
    source = (EXAMPLES / "models" / f"{name}.qvr").read_text(encoding="utf-8")
    data = (
        EXAMPLES / "models" / f"{name.removesuffix('_noncentered').removesuffix('_centered')}.json"
    )
    run = prepare(source, arguments(method="prior", steps=2), data=data)
    assert run.observations == {}


# ------------------------------------------------------------------ printable messages


def test_printable_escapes_controls_and_markup() -> None:
    assert printable("a\x1b[31mb\x00\n\u202e") == "a\\x1b[31mb\\x00\\x0a\\u202e"
    assert printable("[x](command:workbench.action.terminal.new)") == (
        "[x]\\(command:workbench.action.terminal.new\\)"
    )
    assert printable("<command:x>`y`") == "\\<command:x\\>\\`y\\`"
    assert printable("k" * 500).endswith("...") and len(printable("k" * 500)) == 83
    assert quoted("x[0]") == "'x[0]'"


def test_csv_header_cells_with_nul_and_ansi_escapes_are_shown_escaped(tmp_path: Path) -> None:
    path = tmp_path / "esc\x1b[2J.csv"
    path.write_bytes(b"x\x1b[31m\x00,next\n1,2\n")
    with pytest.raises(InferenceError) as info:
        prepare(SMALL, arguments(steps=2), data=path)
    message = str(info.value)
    assert message.isprintable() and "\\x1b[31m\\x00" in message and "esc\\x1b[2J" in message


def test_a_command_link_in_a_data_key_cannot_form_a_link(tmp_path: Path) -> None:
    key = "[x](command:workbench.action.terminal.new)"
    data = json_data(tmp_path, {key: 1, "y": [1.0] * 8})  # named beside the missing 'sigma'
    with pytest.raises(InferenceError) as info:
        schools(data)
    message = str(info.value)
    assert "unexpected '[x]\\(command:workbench.action.terminal.new\\)'" in message
    assert not LINK.search(message) and "](" not in message
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"x": [[0] * 8], "next": [0], key: [1]}))
    with pytest.raises(InferenceError) as info:
        prepare(SMALL, arguments(steps=2), data=seed)
    assert not LINK.search(str(info.value)) and "](" not in str(info.value)


def test_a_key_holding_a_link_in_an_npz_is_escaped_too() -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **{"[a](command:x)": np.array(["s"])})
    with pytest.raises(InferenceError) as info:
        read_data(DataFile("d.npz", buffer.getvalue()))
    assert "'[a]\\(command:x\\)' holds <U1 values" in str(info.value)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=400),
        st.text(alphabet=',"\r\n0123456789.x[]{}:-e ', max_size=200).map(str.encode),
    ),
    st.sampled_from([".pt", ".npz", ".csv", ".json"]),
    st.integers(min_value=0, max_value=1 << 16),
)
def test_any_bytes_at_any_budget_give_tensors_or_one_line(
    content: bytes, suffix: str, budget: int
) -> None:
    try:
        arrays = read_data(DataFile(f"d{suffix}", content), budget=budget)
    except InferenceError as exc:
        assert "\n" not in str(exc).strip() and str(exc).isprintable()
    else:
        for t in arrays.values():
            assert t.layout == torch.strided and t.is_contiguous()


ONE_SCHOOL = """object School : FinSet 1
program m : School -> School
    sample mu <- Normal(0.0, 5.0)
    observe y : School <- Normal(mu, 1.0)
    return mu
export m
"""


@pytest.mark.parametrize("y", [28.0, [28.0]], ids=["scalar", "one-entry-axis"])
def test_a_one_entry_plate_takes_its_value_with_or_without_the_axis(y: object) -> None:
    """`observe y : School` over `FinSet 1`: `[28.0]` (the plate's axis written out) and
    `28.0` are the same one observation; a longer list still reshapes the plate."""
    data = DataFile("one.json", json.dumps({"y": y}).encode())
    run = prepare(ONE_SCHOOL, arguments(method="svi"), data=data)
    assert tuple(run.observations["y"].shape) == ()
    wrong = DataFile("two.json", json.dumps({"y": [28.0, 1.0]}).encode())
    with pytest.raises(InferenceError, match=r"data 'y' has shape \(2,\) but observe y"):
        prepare(ONE_SCHOOL, arguments(method="svi"), data=wrong)


def test_an_npz_scalar_keeps_its_shape(tmp_path: Path) -> None:
    """`np.savez(y=np.float64(28))` is a 0-d array: read back as shape (), as .pt and
    JSON scalars are (it came back as (1,))."""
    path = tmp_path / "scalar.npz"
    np.savez(path, y=np.array(28.0))
    assert tuple(read_data(path)["y"].shape) == ()


def test_an_empty_array_for_a_data_name_is_refused_naming_it() -> None:
    """The fuzzer's cases: an empty `sigma` reached a reduction, a guide or a support
    check inside torch and escaped as IndexError or RuntimeError."""
    source = SCHOOLS.read_text(encoding="utf-8")
    data = json.loads((SCHOOLS.parent / "eight_schools.json").read_text(encoding="utf-8"))
    data["sigma"] = []
    with pytest.raises(InferenceError, match=r"'sigma' has no values \(an empty array\)"):
        prepare(source, arguments(method="svi"), data=DataFile("e.json", json.dumps(data).encode()))
