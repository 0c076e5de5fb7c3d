"""The header of a `.npy` array (its shape and dtype), read without its values.

Both readers that size a file before loading it use it: `qvr run --data` for an
`.npz` of data (`runs.data_sizes`) and `qvr compare`/`qvr plot` for a run written as
`.npz` (`posterior.run_files`), so a file that declares gigabytes is refused from its
first bytes by one reading of the format.
"""

from __future__ import annotations

from typing import IO, Any

import numpy as np
from numpy.lib import format as npy


def read_header(
    f: IO[bytes],
) -> tuple[tuple[int, ...], bool, np.dtype[Any], tuple[int, int]]:
    """`(shape, fortran_order, dtype, version)` from the stream's magic and header; ValueError
    (numpy's) for bytes that are not one. Versions 2 and 3 differ only in the header
    text's encoding, which for an array of numbers is ASCII either way."""
    version = npy.read_magic(f)
    read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, fortran_order, dtype = read(f)
    return tuple(int(n) for n in shape), bool(fortran_order), dtype, version


def dtype_name(dtype: np.dtype[Any]) -> str:
    """A dtype in a message: numpy's name for it, or `structured` for one whose fields
    (named by the file) a message would quote."""
    return "structured" if dtype.kind == "V" else str(dtype)
