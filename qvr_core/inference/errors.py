"""The one exception type inference raises for problems a user can fix.

Callers (the command line, the language server's worker) catch it and show
its message without a traceback.
"""

from __future__ import annotations

from typing import Any


class InferenceError(Exception):
    """A problem with the model, the data or the settings of an inference run."""


class NonFiniteLossError(InferenceError):
    """The objective became NaN or infinite; `step` is the 1-based step number."""

    def __init__(self, step: int, value: float, what: str = "loss") -> None:
        self.step = step
        self.value = value
        super().__init__(
            f"the {what} became {value} at step {step}; inference stopped. "
            "Try a smaller learning rate, a smaller init scale, or check the data "
            "for out-of-range values."
        )
        self.what = what

    def __reduce__(self) -> tuple[type[NonFiniteLossError], tuple[Any, ...], dict[str, Any]]:
        # rebuilt from its arguments (not its message) when it crosses from a chain process
        return type(self), (self.step, self.value, self.what), dict(self.__dict__)


class RunTooLargeError(InferenceError):
    """Refused before anything was allocated: the run's estimated memory is over the budget."""


class RunOutOfMemoryError(InferenceError):
    """The run ran out of memory; the message names what the estimate says is big."""
