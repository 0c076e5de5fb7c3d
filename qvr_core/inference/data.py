"""Reading a data set for `qvr run --data` and the server's `qvr.runInference`.

Three formats, all holding the program input under the key `x` and one entry
per observed site, each with the batch on the first axis:

- `.pt`: a dict of tensors saved with `torch.save`;
- `.npz`: arrays saved with `numpy.savez`, same keys;
- `.csv`: a header row, then one row per example. A column is named after its
  key (`x`, `next_token`) when the key holds one number per example, or
  `key[i]` / `key[i,j]` for the elements of a vector or matrix per example
  (`x[0]`, ..., `x[7]` for a sequence of 8 tokens; `x[t,k]` for a sequence of
  vectors). Empty cells are an error. A bare `key` column also serves a value
  of dimension 1 (`Real 1`).

Values are converted to the dtype the program uses for that value (int64 for
FinSet values, float for the rest); shapes are checked by the runtime, whose
errors name the site.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

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
    if not p.is_file():
        raise InferenceError(f"data file {p} does not exist")
    return p


def read_data(path: Path) -> dict[str, torch.Tensor]:
    """Every array in the file by key, as tensors (dtypes as stored)."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".pt":
            obj = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(obj, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items()
            ):
                raise InferenceError(f"{path}: expected a dict of tensors saved with torch.save")
            return dict(obj)
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                return {k: torch.from_numpy(np.array(npz[k])) for k in npz.files}
        if suffix == ".csv":
            return _read_csv(path)
    except InferenceError:
        raise
    except Exception as e:  # a corrupt file: say which, without a traceback
        raise InferenceError(f"cannot read {path}: {e}") from e
    raise InferenceError(f"{path}: unknown data format '{suffix}' (use .pt, .npz or .csv)")


def _read_csv(path: Path) -> dict[str, torch.Tensor]:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
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
                except (IndexError, ValueError) as e:
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
