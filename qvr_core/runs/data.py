"""Reading a data set for `qvr run --data` and the server's `qvr.runInference`.

Four formats, all holding the program input under the key `x` and one entry
per observed site, each with the batch on the first axis:

- `.pt`: a dict of tensors saved with `torch.save`, read with
  `torch.load(weights_only=True)`: torch's restricted unpickler, which builds
  tensors and plain containers and refuses any other object, so a `.pt`
  cannot run code. Only dense tensors of real numbers are accepted (a sparse,
  quantized or complex tensor is refused by name);
- `.npz`: arrays saved with `numpy.savez`, same keys, read without pickles
  (`allow_pickle=False`: an object array is refused);
- `.json`: one object whose values are numbers or rectangular nested lists of
  numbers (whole numbers are read as integers, so they can index);
- `.csv`: UTF-8 (a byte-order mark is allowed), a header row, then one row
  per example. A column is named after its key (`x`, `next_token`) when the
  key holds one number per example, or `key[i]` / `key[i,j]` for the
  elements of a vector or matrix per example (`x[0]`, ..., `x[7]` for a
  sequence of 8 tokens; `x[t,k]` for a sequence of vectors). Empty cells are
  an error. A bare `key` column also serves a value of dimension 1 (`Real 1`).

A file is read once, whole, into a `DataFile` (at most `MAX_DATA_BYTES`):
the language server reads it in the workspace and hands the worker the
bytes, so what runs is what was checked. `conform` then validates every
array against the program's types (shape, dtype, dense, finite, indices in
range) before anything is compiled, each error naming the key.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import torch

from qvr_core.check.types import Product, Seq, ValueType
from qvr_core.datafile import DATA_SUFFIXES, DataFile, DataFileError, read_file
from qvr_core.inference.errors import InferenceError

_COLUMN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+(?:\s*,\s*\d+)*)\])?$")


def resolve_data_path(path: str | Path, root: str | Path | None = None) -> Path:
    """The absolute path of a data file; refuses one outside `root` when given."""
    p = Path(path)
    if root is not None and not p.is_absolute():
        p = Path(root) / p
    p = p.resolve()
    if root is not None:
        base = Path(root).resolve()
        if not p.is_relative_to(base):
            raise InferenceError(f"refusing to read {p}: it is outside the workspace {base}")
    if not p.exists():
        raise InferenceError(f"data file {p} does not exist")
    if not p.is_file():
        raise InferenceError(f"data file {p} is not a regular file")
    return p


def read_data(data: DataFile | str | Path) -> dict[str, torch.Tensor]:
    """Every array in the data by key, as dense tensors (dtypes as stored), validated as
    read: real numbers only, every value finite."""
    try:
        file = data if isinstance(data, DataFile) else read_file(data)
    except DataFileError as e:
        raise InferenceError(str(e)) from None
    name, suffix = file.name, Path(file.name).suffix.lower()
    try:
        if suffix == ".pt":
            arrays = _read_pt(file)
        elif suffix == ".npz":
            arrays = _read_npz(file)
        elif suffix == ".csv":
            arrays = _read_csv(file)
        elif suffix == ".json":
            arrays = _read_json(file)
        else:
            raise InferenceError(
                f"{name}: unknown data format '{suffix}' (use {', '.join(DATA_SUFFIXES)})"
            )
    except InferenceError:
        raise
    except Exception as e:  # a corrupt file: say which, without a traceback
        raise InferenceError(f"cannot read {name}: {_first_line(e)}") from e
    for key, t in arrays.items():
        _check_numbers(t, key, name)
    return arrays


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _read_pt(file: DataFile) -> dict[str, torch.Tensor]:
    obj = torch.load(io.BytesIO(file.content), map_location="cpu", weights_only=True)
    if not isinstance(obj, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()
    ):
        raise InferenceError(f"{file.name}: expected a dict of tensors saved with torch.save")
    for key, t in obj.items():
        if t.layout != torch.strided or t.is_quantized or t.is_nested:
            kind = "quantized" if t.is_quantized else str(t.layout).removeprefix("torch.")
            raise InferenceError(
                f"{file.name}: '{key}' is a {kind} tensor; save a dense one (t.to_dense())"
            )
    return dict(obj)


def _read_npz(file: DataFile) -> dict[str, torch.Tensor]:
    out = {}
    with np.load(io.BytesIO(file.content), allow_pickle=False) as npz:
        for k in npz.files:
            a = np.asarray(npz[k])
            if a.dtype.kind not in "biuf":
                raise InferenceError(
                    f"{file.name}: '{k}' holds {a.dtype} values; data must be numbers"
                )
            if a.dtype.kind == "u" and a.dtype.itemsize > 1:
                a = a.astype(np.int64)  # torch has no uint16..uint64 arithmetic
            out[k] = torch.from_numpy(np.ascontiguousarray(a))
    return out


def _read_json(file: DataFile) -> dict[str, torch.Tensor]:
    """A JSON object of numbers and rectangular nested lists of numbers, by key."""
    try:
        obj = json.loads(file.content.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InferenceError(f"{file.name}: not JSON: {_first_line(e)}") from None
    if not isinstance(obj, dict):
        raise InferenceError(f"{file.name}: expected a JSON object of arrays by name")
    out = {}
    for key, value in obj.items():
        whole = _all_ints(value)
        try:
            a = np.asarray(value, dtype=np.int64 if whole else np.float64)
        except (TypeError, ValueError, OverflowError):
            raise InferenceError(
                f"{file.name}: '{key}' must be a number or a rectangular list of numbers"
            ) from None
        out[key] = torch.from_numpy(a)
    return out


def _all_ints(value: object) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, bool) or not isinstance(v, int):
            return False
    return True


def _check_numbers(t: torch.Tensor, key: str, name: str) -> None:
    if t.is_complex() or not (t.is_floating_point() or t.dtype == torch.bool or _is_int(t)):
        dtype = str(t.dtype).removeprefix("torch.")
        raise InferenceError(f"{name}: '{key}' holds {dtype} values; data must be real numbers")
    if t.is_floating_point() and t.numel() and not bool(torch.isfinite(t).all()):
        bad = (~torch.isfinite(t)).nonzero()[0].tolist()
        at = ", ".join(str(i) for i in bad)
        raise InferenceError(
            f"{name}: '{key}' holds a value that is not finite (NaN or infinity) at [{at}]"
        )


def _is_int(t: torch.Tensor) -> bool:
    return t.dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def _read_csv(file: DataFile) -> dict[str, torch.Tensor]:
    path = file.name
    try:
        text = file.content.decode("utf-8-sig")  # a byte-order mark is not part of the header
    except UnicodeDecodeError as e:
        raise InferenceError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows:
        raise InferenceError(f"{path}: empty file; the first row must name the columns")
    header, body = rows[0], [r for r in rows[1:] if any(c.strip() for c in r)]
    columns: dict[str, list[tuple[tuple[int, ...], int]]] = {}
    for col, name in enumerate(header):
        m = _COLUMN.match(name.strip())
        if not m:
            raise InferenceError(f"{path}: column {col + 1} '{name}' is not `key` or `key[i,...]`")
        index = tuple(int(i) for i in m.group(2).split(",")) if m.group(2) else ()
        columns.setdefault(m.group(1), []).append((index, col))
    out = {}
    for key, cols in columns.items():
        arity = {len(i) for i, _ in cols}
        if len(arity) != 1:
            raise InferenceError(f"{path}: columns of '{key}' mix different index arities")
        shape = tuple(max(i[a] for i, _ in cols) + 1 for a in range(arity.pop()))
        size = int(np.prod(shape)) if shape else 1
        if len(cols) != size:
            raise InferenceError(f"{path}: '{key}' needs {size} columns for shape {shape}")
        array = np.empty((len(body), *shape), dtype=np.float64)
        for r, row in enumerate(body):
            for index, col in cols:
                try:
                    array[(r, *index)] = float(row[col])
                except (IndexError, ValueError, OverflowError) as e:
                    raise InferenceError(
                        f"{path}: row {r + 2}, column '{header[col]}': not a number"
                    ) from e
        out[key] = torch.from_numpy(array)
    return out


def select(
    data: dict[str, torch.Tensor], observed: Iterable[str], source: str
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Split a data set into the input `x` and the observations, refusing missing or
    unknown keys and inconsistent batch sizes."""
    observed = list(observed)
    expected = ["x", *observed]
    missing = [k for k in expected if k not in data]
    unknown = sorted(set(data) - set(expected))
    if missing or unknown:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(repr(k) for k in missing)}")
        if unknown:
            parts.append(f"unexpected {', '.join(repr(k) for k in unknown)}")
        raise InferenceError(
            f"{source}: {'; '.join(parts)}. The data must hold exactly 'x' (the program "
            f"input) and the observed sites: {', '.join(repr(k) for k in expected)}"
        )
    sizes = {k: int(data[k].shape[0]) if data[k].dim() else None for k in expected}
    if len(set(sizes.values())) != 1 or None in sizes.values():
        raise InferenceError(
            f"{source}: every entry needs the same batch size on its first axis, got "
            + ", ".join(f"{k}: {v}" for k, v in sizes.items())
        )
    return data["x"], {k: data[k] for k in observed}


def conform(
    x: torch.Tensor,
    observations: Mapping[str, torch.Tensor],
    input_type: ValueType,
    site_types: Mapping[str, ValueType],
    source: str,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The input and observations as the program takes them, or an error naming the key.

    Types are the checker's (the program's inferred input, each observed
    site's value): FinSet values must be whole numbers in range, a
    `Real 1` value may come as one number per example, and every sequence
    must have the input's length.
    """
    x = _conform(x, input_type, "x", source)
    length = x.shape[1] if isinstance(input_type, Seq) else None
    out = {}
    for key, value in observations.items():
        t = site_types[key]
        v = _conform(value, t, key, source)
        if isinstance(t, Seq) and length is not None and v.shape[1] != length:
            raise InferenceError(
                f"{source}: '{key}' is a sequence of length {v.shape[1]} but 'x' has length "
                f"{length}"
            )
        out[key] = v
    return x, out


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
                f"{source}: '{key}' holds FinSet values ({t.label}) and must be whole numbers"
            )
        if value.numel() and float(value.abs().max()) >= 2**53:
            raise InferenceError(f"{source}: '{key}' holds an index too large for {t.label}")
        value = value.long()
    elif not p.discrete:
        value = value.to(torch.get_default_dtype())
    else:
        value = value.long()
    need = 1 + core_ndim(t)  # one batch axis, no more: a stray axis is not a second batch
    if value.dim() != need:
        shape = ", ".join(str(n) for n in value.shape)
        raise InferenceError(
            f"{source}: '{key}' has shape ({shape}) but {t.label} data is {describe(t)} "
            f"({need} axes)"
        )
    try:
        return validate(value, t, f"{source}: '{key}'")
    except QvrRuntimeError as e:
        raise InferenceError(str(e)) from None
