"""The one exception type inference raises for problems a user can fix.

Callers (the command line, the language server's worker) catch it and show
its message without a traceback. torch's own errors from a model during
inference (`is_torch_error`) are put in these words where they happen: a
NUTS chain's become a `ChainError`, an SVI step's name the step.
"""

from __future__ import annotations

from typing import Any

from qvr_core.runtime.errors import QvrError, QvrRuntimeError

#: What torch raises for a value or a shape its operations refuse (its LinAlgError is a
#: RuntimeError).
TORCH_ERRORS = (RuntimeError, ValueError, IndexError, ArithmeticError)


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


class ChainError(InferenceError):
    """torch failed inside a NUTS chain: the log density or its gradient, at a point the
    sampler reached, raised one of torch's own errors. It names the chain (0-based, as
    the summary's warnings do), the iteration and torch's first line, in the same words
    whether the chain ran here or in a chain process."""

    def __init__(self, chain: int, iteration: int, num_warmup: int, cause: str) -> None:
        self.chain = chain
        self.iteration = iteration  # 1-based, the one that failed
        self.num_warmup = num_warmup
        self.cause = cause  # torch's first line
        phase = "warmup" if iteration <= num_warmup else "sampling"
        super().__init__(
            f"chain {chain}, iteration {iteration} ({phase}): the model's log density "
            f"failed where the sampler moved: {cause}"
        )

    def __reduce__(self) -> tuple[type[ChainError], tuple[Any, ...], dict[str, Any]]:
        # rebuilt from its arguments (not its message) when it crosses from a chain process
        return (
            type(self),
            (self.chain, self.iteration, self.num_warmup, self.cause),
            dict(self.__dict__),
        )


def is_torch_error(e: BaseException) -> bool:
    """Whether `e` is torch's own error (a Cholesky factor that fails, a shape that does
    not fit), not one already in the user's words: ours, or the runtime's `QvrError` and
    `QvrRuntimeError`, which are a ValueError and a RuntimeError too."""
    return isinstance(e, TORCH_ERRORS) and not isinstance(
        e, InferenceError | QvrError | QvrRuntimeError
    )
