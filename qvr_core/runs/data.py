"""Reading a data set for `qvr run --data` and the server's `qvr.runInference`.

Four formats, all holding the program input under the key `x` and one entry
per observed site, each with the batch on the first axis:

- `.pt`: a dict of tensors saved with `torch.save` (its zip format, torch 1.6
  on), read with `torch.load(weights_only=True)`: torch's restricted
  unpickler, which builds tensors and plain containers and refuses any other
  object, so a `.pt` cannot run code. Only dense tensors of real numbers with
  their values are accepted (a sparse, quantized, complex, float8 or meta
  tensor is refused by name);
- `.npz`: arrays saved with `numpy.savez`, same keys, read without pickles
  (`allow_pickle=False`: an object array is refused);
- `.json`: one object whose values are numbers or rectangular nested lists of
  numbers (whole numbers are read as integers, so they can index); a sentence a
  program parses (`parse(D, sentence)`) may be its words, a list of strings, read as
  their ids in the deduction's lexicon (`Vocabulary`);
- `.csv`: UTF-8 (a byte-order mark is allowed), a header row, then one row
  per example. A column is named after its key (`x`, `next_token`) when the
  key holds one number per example, or `key[i]` / `key[i,j]` for the
  elements of a vector or matrix per example (`x[0]`, ..., `x[7]` for a
  sequence of 8 tokens; `x[t,k]` for a sequence of vectors). Empty cells are
  an error. A bare `key` column also serves a value of dimension 1 (`Real 1`).

A file is read once, whole, into a `DataFile` (at most `MAX_DATA_BYTES`, and
no more than the memory budget): the language server reads it in the workspace
and hands the worker the bytes, so what runs is what was checked. Its values are
read in a bounded way (`qvr_core.runs.data_sizes`): what reading will hold is
known from the format's headers (`.npz`, `.pt`) or from its separators counted
(`.csv`, `.json`) and checked against the memory budget before any value is
decoded; a CSV is parsed a row at a time into blocks of numbers. `conform` then
validates every array against the program's types (shape, dtype, dense, finite,
indices in range) before anything is compiled, each error naming the key
(`quoted`: printable, no markup).
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from numpy.lib import format as npy

from qvr_core.check.types import Product, Seq, ValueType
from qvr_core.host.datafile import (
    DATA_SUFFIXES,
    DataFile,
    DataFileError,
    DataFileTooLargeError,
    printable,
    quoted,
    quoted_list,
    read_file,
)
from qvr_core.inference.errors import InferenceError, RunOutOfMemoryError, RunTooLargeError
from qvr_core.runs.data_sizes import (
    PER_NUMBER,
    Need,
    NpyMember,
    csv_need,
    directory_need,
    json_need,
    npz_members,
    npz_need,
    pt_need,
    shown_error,
)
from qvr_core.sizing.resources import default_budget
from qvr_core.text.units import format_bytes

_COLUMN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+(?:\s*,\s*\d+)*)\])?$")
#: One line of a text with its line end (`\r\n`, `\r` or `\n`), or the last without one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
#: Bytes read from an archive member at a time, numbers checked finite at a time.
_CHUNK_BYTES = 1 << 22
_CHUNK_NUMBERS = 1 << 20
#: The largest integer a run computes with (torch's int64).
_INT64_MAX = (1 << 63) - 1
#: The dtypes data may hold: real numbers torch computes with (a float8 is storage only).
_DTYPES = frozenset(
    {
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
    }
)


def resolve_data_path(path: str | Path, root: str | Path | None = None) -> Path:
    """The absolute path of a data file; refuses one outside `root` when given."""
    p = Path(path)
    if root is not None and not p.is_absolute():
        p = Path(root) / p
    p = p.resolve()
    if root is not None:
        base = Path(root).resolve()
        if not p.is_relative_to(base):
            raise InferenceError(
                f"refusing to read {printable(str(p), 320)}: it is outside the workspace "
                f"{printable(str(base), 320)}"
            )
    if not p.exists():
        raise InferenceError(f"data file {printable(str(p), 320)} does not exist")
    if not p.is_file():
        raise InferenceError(f"data file {printable(str(p), 320)} is not a regular file")
    return p


@dataclass(frozen=True)
class Vocabulary:
    """The words a data key may hold as strings (a sentence a deduction parses): a word's
    id is its place in `words`; `owner` names the deduction in messages."""

    owner: str
    words: tuple[str, ...]


def read_data(
    data: DataFile | str | Path,
    budget: int | None = None,
    shapes: Callable[[Mapping[str, tuple[int, ...]]], None] | None = None,
    words: Mapping[str, Vocabulary] | None = None,
) -> dict[str, torch.Tensor]:
    """Every array in the data by key, as dense tensors (dtypes as stored), validated as
    read: real numbers only, every value finite.

    What reading holds is checked against `budget` bytes (None: the default budget,
    half the memory available) before any value is decoded: a file over it is refused
    with `RunTooLargeError`, one line naming what is big. `shapes`, when given, sees each
    array's shape by key where the format's headers give them (`.npz`), after that check
    and before any value is decoded: it raises `InferenceError` to refuse the file.
    `words` gives the keys a JSON file may hold as a list of words, and their words."""
    limit = budget if budget is not None else default_budget()
    try:
        file = data if isinstance(data, DataFile) else read_file(data, budget=limit)
    except DataFileTooLargeError as e:
        raise RunTooLargeError(str(e)) from None
    except DataFileError as e:
        raise InferenceError(str(e)) from None
    shown, suffix = printable(file.name, 320), Path(file.name).suffix.lower()
    reader = _READERS.get(suffix)
    if reader is None:
        raise InferenceError(
            f"{shown}: unknown data format {quoted(suffix)} (use {', '.join(DATA_SUFFIXES)})"
        )
    Need(len(file.content), f"a file of {len(file.content):,} bytes").check(file.name, limit)
    try:
        if suffix == ".npz":
            arrays = _read_npz(file, limit, shapes)
        elif suffix == ".json":
            arrays = _read_json(file, limit, words)
        else:
            arrays = reader(file, limit)
        for key, t in arrays.items():
            _check_numbers(t, key, shown)
    except InferenceError:
        raise
    except MemoryError:
        raise RunOutOfMemoryError(
            f"{shown}: ran out of memory reading it, within the memory budget of "
            f"{format_bytes(limit)} (the machine had less to give): lower the budget or "
            "give a smaller data file"
        ) from None
    except Exception as e:  # a corrupt file: say which, without a traceback
        raise InferenceError(f"cannot read {shown}: {shown_error(e)}") from e
    return arrays


def _read_pt(file: DataFile, budget: int) -> dict[str, torch.Tensor]:
    """A dict of dense tensors. The archive's records (all `torch.load` materialises)
    are sized before it loads; the tensors' numbers before any is touched."""
    shown = printable(file.name, 320)
    need = pt_need(file.content, file.name, budget)
    need.check(file.name, budget)
    obj = torch.load(io.BytesIO(file.content), map_location="cpu", weights_only=True)
    if not isinstance(obj, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()
    ):
        raise InferenceError(f"{shown}: expected a dict of tensors saved with torch.save")
    for key, t in obj.items():
        if t.is_meta:
            raise InferenceError(
                f"{shown}: {quoted(key)} is a meta tensor, a shape without values; save the "
                "tensor with its values"
            )
        if t.layout != torch.strided or t.is_quantized or t.is_nested:
            kind = "quantized" if t.is_quantized else str(t.layout).removeprefix("torch.")
            raise InferenceError(
                f"{shown}: {quoted(key)} is a {kind} tensor; save a dense one (t.to_dense())"
            )
        _check_dtype(t, key, shown)
    if obj:
        numbers = sum(t.numel() for t in obj.values())
        key, big = max(obj.items(), key=lambda kv: kv[1].numel())
        dtype = str(big.dtype).removeprefix("torch.")
        Need(
            need.total + numbers * PER_NUMBER,
            f"{quoted(key)}: {big.numel():,} {dtype} numbers of shape {tuple(big.shape)}",
        ).check(file.name, budget)
    return {k: t.contiguous() for k, t in obj.items()}  # a view as the numbers it shows


def _read_npz(
    file: DataFile,
    budget: int,
    shapes: Callable[[Mapping[str, tuple[int, ...]]], None] | None = None,
) -> dict[str, torch.Tensor]:
    """Arrays saved with `numpy.savez`: each member's header read, the whole archive sized
    and the shapes shown to `shapes` before any array is decoded; never a pickle."""
    directory_need(file.content).check(file.name, budget)
    out = {}
    with zipfile.ZipFile(io.BytesIO(file.content)) as archive:
        members = npz_members(archive, file.name)
        npz_need(file.content, members).check(file.name, budget)
        if shapes is not None:
            shapes({m.key: m.shape for m in members})
        for m in members:
            a = _read_member(archive, m, file.name)
            if not a.dtype.isnative:
                a = a.astype(a.dtype.newbyteorder("="))
            if a.dtype.kind == "u" and a.dtype.itemsize > 1:
                _check_int64(a, m.key, file.name)
                a = a.astype(np.int64)  # torch has no uint16..uint64 arithmetic
            out[m.key] = torch.from_numpy(np.require(a, requirements="C"))
    return out


def _check_int64(a: np.ndarray, key: str, name: str) -> None:
    """Refuse unsigned integers past int64's largest, which the cast to int64 (torch's
    integers) would wrap to negative numbers."""
    if a.dtype.itemsize < 8 or not a.size:
        return
    top = int(a.max())
    if top > _INT64_MAX:
        raise InferenceError(
            f"{printable(name, 320)}: {quoted(key)} holds {top:,} ({a.dtype}), past "
            f"{_INT64_MAX:,}, the largest integer a run computes with (int64); save "
            "values that fit int64, or real numbers"
        )


def _read_member(archive: zipfile.ZipFile, m: NpyMember, name: str) -> np.ndarray:
    """One member's values, streamed into an array of the shape its header gave."""
    a = np.empty(m.numel, dtype=m.dtype)
    raw = a.view(np.uint8)
    with archive.open(m.info) as f:
        npy.read_magic(f)
        npy.read_array_header_1_0(f) if m.version == (1, 0) else npy.read_array_header_2_0(f)
        done = 0
        while done < m.nbytes:
            chunk = f.read(min(_CHUNK_BYTES, m.nbytes - done))
            if not chunk:
                raise InferenceError(
                    f"{printable(name, 320)}: {quoted(m.key)} ends after {done:,} of the "
                    f"{m.nbytes:,} bytes its header gives"
                )
            raw[done : done + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            done += len(chunk)
    if m.fortran_order:
        return a.reshape(m.shape[::-1]).transpose()
    return a.reshape(m.shape)


def _read_json(
    file: DataFile, budget: int, words: Mapping[str, Vocabulary] | None = None
) -> dict[str, torch.Tensor]:
    """A JSON object of numbers and rectangular nested lists of numbers, by key (a key of
    `words` also a list of its words); what parsing makes is bounded by the separators
    counted before it parses."""
    shown = printable(file.name, 320)
    json_need(file.content).check(file.name, budget)
    try:
        obj = json.loads(file.content.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InferenceError(f"{shown}: not JSON: {shown_error(e)}") from None
    if not isinstance(obj, dict):
        raise InferenceError(f"{shown}: expected a JSON object of arrays by name")
    out = {}
    for key in list(obj):
        value = obj.pop(key)  # each key's lists freed once it is an array
        vocabulary = (words or {}).get(key)
        if vocabulary is not None and _all_strings(value):
            out[key] = torch.tensor(_word_ids(value, vocabulary, key, shown), dtype=torch.long)
            continue
        whole = _all_ints(value)
        try:
            a = np.asarray(value, dtype=np.int64 if whole else np.float64)
        except OverflowError:
            raise InferenceError(
                f"{shown}: {quoted(key)} holds an integer outside int64's range "
                f"({-_INT64_MAX - 1:,} to {_INT64_MAX:,}), which a run computes with; write "
                "it as a real number (with a decimal point) or save values that fit"
                if whole
                else f"{shown}: {quoted(key)} holds an integer too large for a float64"
            ) from None
        except (TypeError, ValueError):
            raise InferenceError(
                f"{shown}: {quoted(key)} must be a number or a rectangular list of numbers"
                + (
                    f", or the sentence's words, a list of strings ({vocabulary.owner}'s)"
                    if vocabulary is not None
                    else ""
                )
            ) from None
        del value
        out[key] = torch.from_numpy(a)
    return out


def _all_strings(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _word_ids(value: list[str], vocabulary: Vocabulary, key: str, shown: str) -> list[int]:
    """Each word's id in the vocabulary, or an error naming the first unknown word."""
    ids = {w: i for i, w in enumerate(vocabulary.words)}
    for position, word in enumerate(value):
        if word not in ids:
            known = ", ".join(quoted(w) for w in vocabulary.words[:12])
            more = ", ..." if len(vocabulary.words) > 12 else ""
            raise InferenceError(
                f"{shown}: {quoted(key)}: word {position + 1}, {quoted(word)}, is not in "
                f"the lexicon of {vocabulary.owner} ({known}{more})"
            )
    return [ids[w] for w in value]


def _all_ints(value: object) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, bool) or not isinstance(v, int):
            return False
    return True


def _check_dtype(t: torch.Tensor, key: str, shown: str) -> None:
    if t.dtype not in _DTYPES:
        dtype = str(t.dtype).removeprefix("torch.")
        raise InferenceError(
            f"{shown}: {quoted(key)} holds {dtype} values; data must be real numbers "
            "(float16, bfloat16, float32, float64, integers or booleans)"
        )


def _check_numbers(t: torch.Tensor, key: str, shown: str) -> None:
    """Real numbers of a dtype torch computes with, each finite: checked with numpy a
    chunk at a time (`isfinite` copies what it checks; numpy's is many times torch's
    speed on one thread)."""
    _check_dtype(t, key, shown)
    if not t.is_floating_point() or not t.numel():
        return
    flat = t.detach().reshape(-1)  # a view: every tensor read is contiguous
    for start in range(0, flat.numel(), _CHUNK_NUMBERS):
        part = flat[start : start + _CHUNK_NUMBERS]
        finite = np.isfinite(part.float().numpy() if part.dtype == torch.bfloat16 else part.numpy())
        if bool(finite.all()):
            continue
        first = start + int(np.argmin(finite))
        at = ", ".join(str(int(i)) for i in np.unravel_index(first, tuple(t.shape)))
        raise InferenceError(
            f"{shown}: {quoted(key)} holds a value that is not finite (NaN or infinity) at [{at}]"
        )


class _Lines:
    """The lines of a text one at a time, for `csv.reader`: a row is refused when it
    has more than `cap` cells before csv makes them (each line's commas, and one)."""

    def __init__(self, text: str, shown: str) -> None:
        self.matches = _LINE.finditer(text)
        self.shown = shown
        self.cap: int | None = None
        self.columns = 0
        self.cells = 0
        self.line = 0

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self.matches).group()
        self.line += 1
        self.cells += line.count(",") + 1
        if self.cap is not None and self.cells > self.cap:
            raise InferenceError(
                f"{self.shown}: line {self.line} has more than {self.cap:,} cells; the "
                f"header names {self.columns:,} columns"
            )
        return line

    def row_read(self) -> None:
        self.cells = 0


def _read_csv(file: DataFile, budget: int) -> dict[str, torch.Tensor]:
    """A header row, then a row per example, parsed a row at a time into blocks of
    numbers: at its peak, reading holds the text and twice the numbers."""
    shown = printable(file.name, 320)
    csv_need(file.content).check(file.name, budget)
    try:
        text = file.content.decode("utf-8-sig")  # a byte-order mark is not part of the header
    except UnicodeDecodeError as e:
        raise InferenceError(f"{shown}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    lines = _Lines(text, shown)
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        raise InferenceError(f"{shown}: empty file; the first row must name the columns")
    layout = _columns(header, shown)
    width = len(header)
    lines.row_read()
    lines.cap, lines.columns = 2 * width + 16, width  # a few empty cells past the header
    rows = _rows(reader, lines, header, shown)
    out = {}
    for key, (shape, order) in layout.items():
        out[key] = torch.from_numpy(rows[:, order].reshape(rows.shape[0], *shape))
    return out


def _columns(header: list[str], shown: str) -> dict[str, tuple[tuple[int, ...], np.ndarray]]:
    """Each key's shape per example and its columns in that shape's order."""
    columns: dict[str, list[tuple[tuple[int, ...], int]]] = {}
    for col, name in enumerate(header):
        m = _COLUMN.match(name.strip())
        if not m:
            raise InferenceError(
                f"{shown}: column {col + 1} {quoted(name)} is not `key` or `key[i,...]`"
            )
        index = tuple(int(i) for i in m.group(2).split(",")) if m.group(2) else ()
        columns.setdefault(m.group(1), []).append((index, col))
    out = {}
    for key, cols in columns.items():
        arity = {len(i) for i, _ in cols}
        if len(arity) != 1:
            raise InferenceError(f"{shown}: columns of {quoted(key)} mix different index arities")
        shape = tuple(max(i[a] for i, _ in cols) + 1 for a in range(arity.pop()))
        size = 1
        for n in shape:
            size *= n
        if len(cols) != size:
            raise InferenceError(f"{shown}: {quoted(key)} needs {size:,} columns for shape {shape}")
        order = np.full(size, -1, dtype=np.int64)
        for index, col in cols:
            flat = int(np.ravel_multi_index(index, shape)) if shape else 0
            if order[flat] >= 0:
                raise InferenceError(f"{shown}: column {quoted(header[col])} appears twice")
            order[flat] = col
        out[key] = (shape, order)
    return out


def _rows(reader: Iterator[list[str]], lines: _Lines, header: list[str], shown: str) -> np.ndarray:
    """The body's numbers, a row per example (rows of empty cells skipped), as float64."""
    width = len(header)
    size = max(1, (1 << 20) // (8 * max(width, 1)))  # blocks of about a megabyte
    blocks: list[np.ndarray] = []
    block = np.empty((size, width), dtype=np.float64)
    filled = 0
    for row in reader:
        lines.row_read()
        if not any(c.strip() for c in row):
            continue
        if len(row) < width:
            raise InferenceError(
                f"{shown}: line {lines.line} has {len(row):,} cells; the header names "
                f"{width:,} columns (column {quoted(header[len(row)])}: not a number)"
            )
        try:
            block[filled] = [float(c) for c in row[:width]]
        except (ValueError, OverflowError):
            col = next(i for i, c in enumerate(row[:width]) if not _is_number(c))
            raise InferenceError(
                f"{shown}: line {lines.line}, column {quoted(header[col])}: "
                f"{quoted(row[col])} is not a number"
            ) from None
        filled += 1
        if filled == size:
            blocks.append(block)
            block = np.empty((size, width), dtype=np.float64)
            filled = 0
    blocks.append(block[:filled])
    rows = np.concatenate(blocks) if len(blocks) > 1 else np.ascontiguousarray(blocks[0])
    blocks.clear()
    return rows


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except (ValueError, OverflowError):
        return False
    return True


_READERS: dict[str, Callable[[DataFile, int], dict[str, torch.Tensor]]] = {
    ".pt": _read_pt,
    ".npz": _read_npz,
    ".csv": _read_csv,
    ".json": _read_json,
}


def select(
    data: dict[str, torch.Tensor],
    observed: Iterable[str],
    source: str,
    optional: Iterable[str] = (),
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Split a data set into the input `x` and the observations (with those of the
    `optional` keys it holds), refusing missing or unknown keys and inconsistent batch
    sizes."""
    observed = list(observed)
    present = [k for k in optional if k in data]
    expected = ["x", *observed, *present]
    missing = [k for k in expected if k not in data]
    unknown = sorted(set(data) - set(expected))
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing {quoted_list(missing)}")
        if unknown:
            parts.append(f"unexpected {quoted_list(unknown)}")
        may = [k for k in optional if k not in present]
        also = f", and may hold {quoted_list(may)}" if unknown and may else ""
        raise InferenceError(
            f"{source}: {'; '.join(parts)}. The data must hold exactly 'x' (the program "
            f"input), the observed sites and the data names: {quoted_list(expected)}{also}"
        )
    sizes = {k: int(data[k].shape[0]) if data[k].dim() else None for k in expected}
    if len(set(sizes.values())) != 1 or None in sizes.values():
        raise InferenceError(
            f"{source}: every entry needs the same batch size on its first axis, got "
            + ", ".join(f"{quoted(k)}: {v}" for k, v in sizes.items())
        )
    if sizes["x"] == 0:
        raise InferenceError(
            f"{source}: the data holds no examples (every entry's first axis has size 0)"
        )
    return data["x"], {k: data[k] for k in expected[1:]}


def conform(
    x: torch.Tensor,
    observations: Mapping[str, torch.Tensor],
    input_type: ValueType,
    site_types: Mapping[str, ValueType],
    source: str,
    picked: Iterable[int] = (),
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The input and observations as the program takes them, or an error naming the key.

    Types are the checker's (the program's inferred input, each observed
    site's value): FinSet values must be whole numbers in range, a
    `Real 1` value may come as one number per example, and every sequence
    must have the input's length, or a number of positions some data name picks
    (`picked`: a site over `h[picks]` has one value per pick).
    """
    x = _conform(x, input_type, "x", source)
    length = x.shape[1] if isinstance(input_type, Seq) else None
    out = {}
    for key, value in observations.items():
        t = site_types[key]
        v = _conform(value, t, key, source)
        allowed = {length, *picked}
        if isinstance(t, Seq) and length is not None and v.shape[1] not in allowed:
            picks = " or the number of positions a data name picks" if picked else ""
            raise InferenceError(
                f"{source}: {quoted(key)} is a sequence of length {v.shape[1]} but 'x' has length "
                f"{length}{picks}"
            )
        out[key] = v
    return x, out


def whole_numbers(value: torch.Tensor, key: str, source: str) -> torch.Tensor:
    """A data name that picks positions (`h[picks]`), as int64: whole numbers, one row per
    example (the run checks them against the sequence's length)."""
    if value.dtype == torch.bool or (
        value.is_floating_point() and not bool((value == value.round()).all())
    ):
        raise InferenceError(
            f"{source}: {quoted(key)} picks positions, so it must hold whole numbers"
        )
    if value.dim() != 2:
        shape = ", ".join(str(n) for n in value.shape)
        raise InferenceError(
            f"{source}: {quoted(key)} has shape ({shape}) but positions are one row per "
            "example (2 axes: examples, picks)"
        )
    return value.long()


def _conform(value: torch.Tensor, t: ValueType, key: str, source: str) -> torch.Tensor:
    from qvr_core.runtime.errors import QvrRuntimeError
    from qvr_core.runtime.tensors import core_ndim, describe, elem, validate

    p: Product = elem(t)
    if value.dim() == 1 and not isinstance(t, Seq) and not p.discrete and p.width == 1:
        value = value.unsqueeze(-1)  # a column of numbers for a one-dimensional value
    if value.dtype == torch.bool:
        value = value.long()
    if p.discrete and value.is_floating_point():
        if not bool((value == value.round()).all()):
            raise InferenceError(
                f"{source}: {quoted(key)} holds FinSet values ({t.label}) and must be whole numbers"
            )
        if value.numel() and float(value.abs().max()) >= 2**53:
            raise InferenceError(f"{source}: {quoted(key)} holds an index too large for {t.label}")
        value = value.long()
    elif not p.discrete:
        value = value.to(torch.get_default_dtype())
    else:
        value = value.long()
    need = 1 + core_ndim(t)  # one batch axis, no more: a stray axis is not a second batch
    if value.dim() != need:
        shape = ", ".join(str(n) for n in value.shape)
        raise InferenceError(
            f"{source}: {quoted(key)} has shape ({shape}) but {t.label} data is {describe(t)} "
            f"({need} axes)"
        )
    try:
        return validate(value, t, f"{source}: {quoted(key)}")
    except QvrRuntimeError as e:
        raise InferenceError(str(e)) from None
