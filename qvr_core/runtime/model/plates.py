"""Plate sizes: what a `: School` annotation or an `over=` axis means as a tensor shape.

A plate is an object of the checked module: `FinSet N` (and any other sized
object) is an axis of N entries; a product `A * B` is one axis per factor. A
one-dimensional continuous object (`Real 1`) adds no axis: its value is a number.
"""

from __future__ import annotations

from collections.abc import Mapping

from qvr_core.runtime.errors import QvrError
from qvr_core.syntax import ast


def object_names(expr: ast.ObjectExpr | None) -> tuple[ast.Name, ...]:
    """The object names of a plate as written (`School`, `A * B`); () for none."""
    if expr is None:
        return ()
    if isinstance(expr, ast.TypeRef):
        return expr.factors
    if isinstance(expr, ast.ObjBinary) and expr.op == "*":
        return object_names(expr.left) + object_names(expr.right)
    raise QvrError(f"a plate must be a product of declared objects, not {type(expr).__name__}")


def axis_size(name: ast.Name, sizes: Mapping[str, int]) -> int:
    """The number of entries along the plate axis named `name`."""
    if name.text not in sizes:
        where = f"line {name.span.start_line + 1}"
        raise QvrError(f"{where}: '{name.text}' is not a declared object, so it is no plate")
    return sizes[name.text]


def plate_shape(expr: ast.ObjectExpr | None, sizes: Mapping[str, int]) -> tuple[int, ...]:
    """The tensor axes a plate annotation adds (a size-1 object adds none)."""
    return tuple(n for n in (axis_size(f, sizes) for f in object_names(expr)) if n != 1)


def option_axes(value: object, sizes: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    """The axes of an `over=A` / `over=[A, B]` / `iid_over=...` option value."""
    if value is None:
        return ()
    items = value.items if isinstance(value, ast.ValueList) else (value,)
    out = []
    for item in items:
        if not isinstance(item, ast.Literal) or item.kind != "name":
            raise QvrError(f"an axis option takes object names, not {getattr(item, 'raw', item)}")
        if item.value not in sizes:
            line = item.span.start_line + 1
            raise QvrError(f"line {line}: axis '{item.value}' is not a declared object")
        out.append((str(item.value), sizes[str(item.value)]))
    return tuple(out)


def object_sizes(checked: object) -> dict[str, int]:
    """Every declared object's number of entries along a plate axis."""
    sizes: dict[str, int] = {}
    for name, obj in getattr(checked, "objects", {}).items():
        size = getattr(obj, "size", None)
        if isinstance(size, int) and size > 0:
            sizes[name] = size
    return sizes
