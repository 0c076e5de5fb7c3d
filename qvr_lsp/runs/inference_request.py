"""The arguments of `qvr.runInference`, checked before any process is started.

The run's own arguments (method, steps, lr, seed, batch, seq_len, data,
max_tree_depth, memory_budget) are checked by `validate_run_arguments`, the
function `qvr run` uses too; this module adds what only the server has: the
document, the wall-clock and process memory limits, and its defaults (a
smaller batch than the command line's, for a quick run from a code lens).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from qvr_core.plan.run_arguments import (
    FIELDS,
    RunArgumentError,
    RunArguments,
    validate_run_arguments,
)
from qvr_lsp.protocol.command_errors import invalid
from qvr_lsp.protocol.contract import RUN_INFERENCE_ARGUMENTS, names

#: What a request leaves out: the command line's defaults with a batch of 4.
DEFAULTS = replace(RunArguments(), batch=4)


@dataclass(frozen=True)
class InferenceRequest:
    uri: str
    run: RunArguments = DEFAULTS
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
        unknown = sorted(set(fields) - names(RUN_INFERENCE_ARGUMENTS))
        if unknown:
            raise invalid(f"qvr.runInference: unknown argument(s) {', '.join(unknown)}")
        try:
            run = validate_run_arguments({k: v for k, v in fields.items() if k in FIELDS}, DEFAULTS)
        except RunArgumentError as exc:
            raise invalid(f"qvr.runInference: {exc}") from None
        return cls(
            uri=_uri(fields.get("uri")),
            run=run,
            timeout=_positive(fields, "timeout"),
            memory_mb=_int(fields, "memory_mb", 64, 1 << 22),
        )

    def job_arguments(self, budget: int | None = None) -> dict[str, Any]:
        """What `qvr_core.runs.run.run_program` takes besides the source and data.

        `budget` (bytes, the server's setting) caps the request's own budget.
        """
        args = self.run.job_arguments()
        own = args["memory_budget"]
        if budget is not None:
            args["memory_budget"] = budget if own is None else min(own, budget)
        return args


def _uri(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise invalid("qvr.runInference: uri must be a non-empty string")
    return value


def _int(fields: dict[str, Any], key: str, low: int, high: int) -> Any:
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid(f"qvr.runInference: {key} must be a whole number from {low} to {high}")
    return value


def _positive(fields: dict[str, Any], key: str) -> Any:
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(f"qvr.runInference: {key} must be a number")
    if not math.isfinite(value) or value <= 0:
        raise invalid(f"qvr.runInference: {key} must be a positive finite number")
    return float(value)
