"""The arguments of `qvr.runInference`, checked before any process is started."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from qvr_lsp.command_errors import invalid

METHODS = ("svi", "nuts", "prior")


@dataclass(frozen=True)
class InferenceRequest:
    uri: str
    program: str | None = None
    method: str = "svi"
    steps: int = 100
    lr: float = 0.01
    seed: int = 0
    batch: int = 4
    seq_len: int = 8
    data: str | None = None
    max_tree_depth: int = 6  # NUTS only
    timeout: float | None = None  # seconds; at most the server's limit
    memory_mb: int | None = None  # at most the server's limit

    @classmethod
    def from_arguments(cls, args: tuple[Any, ...]) -> InferenceRequest:
        """`[{uri, program?, method, ...}]`, or `[uri, program?]` as a code lens sends it."""
        if len(args) == 1 and isinstance(args[0], dict):
            fields = dict(args[0])
        elif 1 <= len(args) <= 2 and all(isinstance(a, str) or a is None for a in args):
            fields = {"uri": args[0], "program": args[1] if len(args) == 2 else None}
        else:
            raise invalid("qvr.runInference takes one object {uri, program?, method, steps, ...}")
        unknown = sorted(set(fields) - set(cls.__dataclass_fields__))
        if unknown:
            raise invalid(f"qvr.runInference: unknown argument(s) {', '.join(unknown)}")
        return cls(
            uri=_text(fields, "uri", required=True),  # type: ignore[arg-type]  # required: never None
            program=_text(fields, "program"),
            method=_method(fields.get("method", "svi")),
            steps=_int(fields, "steps", 100, 1, 1_000_000),
            lr=_positive(fields, "lr", 0.01),
            seed=_int(fields, "seed", 0, 0, 2**63 - 1),
            batch=_int(fields, "batch", 4, 1, 65_536),
            seq_len=_int(fields, "seq_len", 8, 1, 65_536),
            data=_text(fields, "data"),
            max_tree_depth=_int(fields, "max_tree_depth", 6, 1, 12),
            timeout=_positive(fields, "timeout", None),
            memory_mb=_int(fields, "memory_mb", None, 64, 1 << 22),
        )

    def job_arguments(self) -> dict[str, Any]:
        """What `qvr_core.inference.job.run_inference` takes besides the source."""
        return {
            "program": self.program,
            "method": self.method,
            "steps": self.steps,
            "lr": self.lr,
            "seed": self.seed,
            "batch": self.batch,
            "seq_len": self.seq_len,
            "data": self.data,
            "max_tree_depth": self.max_tree_depth,
        }


def _text(fields: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = fields.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise invalid(f"qvr.runInference: {key} must be a non-empty string")
    return value


def _method(value: object) -> str:
    if value not in METHODS:
        choices = ", ".join(METHODS)
        raise invalid(f"qvr.runInference: method must be one of {choices}, not {value!r}")
    return value


def _int(fields: dict[str, Any], key: str, default: int | None, low: int, high: int) -> Any:
    value = fields.get(key, default)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid(f"qvr.runInference: {key} must be a whole number from {low} to {high}")
    return value


def _positive(fields: dict[str, Any], key: str, default: float | None) -> Any:
    value = fields.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"qvr.runInference: {key} must be a number")
    if not math.isfinite(value) or value <= 0:
        raise invalid(f"qvr.runInference: {key} must be a positive finite number")
    return float(value)
