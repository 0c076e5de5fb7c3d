"""The arguments of one inference run, validated once for `qvr run` and `qvr.runInference`.

Both boundaries call `validate_run_arguments` with what they received (the
command line's strings, the request's JSON values), so a bad seed, a NaN
learning rate or a batch of a billion is refused with the same one-line
message before anything runs. Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from qvr_core.sizing.resources import parse_size

METHODS = ("svi", "nuts", "prior")
#: SVI guides (`qvr_core.inference.autoguides.GUIDES`): mean-field Normal, a point (MAP),
#: a full and a low-rank multivariate Normal
GUIDES = ("normal", "delta", "mvn", "lowrank-mvn")
#: NUTS mass matrices adapted in warmup (`inference.nuts.NUTSKernel`): per-coordinate
#: variances or the covariance of the draws (Stan's `diag_e` and `dense_e` metrics);
#: nutpie's Fisher diagonal from the draws and their gradients, alone or with a low-rank
#: correction; `auto`, one of those two by the number of coordinates
#: (`inference.fisher.chosen_metric`)
MASS_MATRICES = ("diag", "dense", "fisher", "low-rank", "auto")
#: Where NUTS chains start (`inference.starts`): at draws of multi-path Pathfinder run from
#: the program's forward draws (the default), or at those forward draws themselves
INITS = ("pathfinder", "prior")
#: What runs NUTS: qvr's own sampler, NumPyro's on the program's NumPyro export
#: (`runs.numpyro_nuts`), or (`auto`, the default) qvr's, whose draws NumPyro takes on
#: after warmup where qvr's trees would cost the most (`numpyro_nuts.Takeover`)
ENGINES = ("auto", "qvr", "numpyro")
#: Where a run computes: the CPU, a CUDA GPU, or a GPU when one is present and the run
#: is large enough to gain from it (`qvr_core.runs.device`)
DEVICES = ("cpu", "cuda", "auto")
MAX_STEPS = 1_000_000
MAX_SEED = 2**63 - 1  # what torch.manual_seed and numpy accept alike
MAX_BATCH = 65_536
MAX_SEQ_LEN = 65_536
MAX_TREE_DEPTH = 15  # 2**15 leapfrog steps per draw; Stan's default is 10
MAX_CHAINS = 64
MAX_SUBSAMPLE = 1 << 24  # rows a step scores: more is a whole plate of a model that size
MAX_LR = 1e30  # finite; a huge rate is the user's to try (the loss says what happens)


class RunArgumentError(ValueError):
    """One argument is wrong: `key` names it, the message says what is allowed."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class RunArguments:
    """A run's arguments, every one within its bounds."""

    program: str | None = None
    method: str = "svi"
    steps: int = 100
    lr: float = 1e-2
    seed: int = 0
    batch: int = 16
    seq_len: int = 8
    data: str | None = None
    max_tree_depth: int = 10  # NUTS only: Stan's default
    #: NUTS only: the mean acceptance statistic warmup tunes the step size to (Stan's
    #: `adapt_delta`, 0.8); higher means smaller steps, for posteriors whose draws diverge
    target_accept: float = 0.8
    chains: int = 4  # NUTS only: chains advanced together (inference.chains)
    mass_matrix: str = "auto"  # NUTS only: `MASS_MATRICES`
    init: str = "pathfinder"  # NUTS only: `INITS`
    engine: str = "auto"  # NUTS only: `ENGINES`
    guide: str = "normal"  # SVI only
    memory_budget: int | None = None  # bytes; None: the default budget
    #: SVI only: score a random subset of a plate's rows each step, `(plate, rows)`
    #: (`--subsample Row=256`; `qvr_core.check.subsample`)
    subsample: tuple[str, int] | None = None
    device: str = "cpu"  # `DEVICES`

    def job_arguments(self) -> dict[str, Any]:
        """What `qvr_core.runs.run.run_program` takes besides the source and data."""
        return {
            "program": self.program,
            "method": self.method,
            "steps": self.steps,
            "lr": self.lr,
            "seed": self.seed,
            "batch": self.batch,
            "seq_len": self.seq_len,
            "max_tree_depth": self.max_tree_depth,
            "target_accept": self.target_accept,
            "chains": self.chains,
            "mass_matrix": self.mass_matrix,
            "init": self.init,
            "engine": self.engine,
            "guide": self.guide,
            "memory_budget": self.memory_budget,
            "subsample": self.subsample,
            "device": self.device,
        }


FIELDS = tuple(f.name for f in fields(RunArguments))


def validate_run_arguments(
    given: Mapping[str, Any], defaults: RunArguments | None = None, *, text: bool = False
) -> RunArguments:
    """The validated arguments; missing ones take `defaults`' values.

    Values are JSON values; with `text` numbers may also be written as strings
    (the command line's). Raises RunArgumentError naming the first bad argument.
    """
    base = defaults or RunArguments()
    unknown = sorted(set(given) - set(FIELDS))
    if unknown:
        raise RunArgumentError(unknown[0], f"unknown argument(s) {', '.join(unknown)}")

    def get(key: str) -> Any:
        value = given.get(key)
        return getattr(base, key) if value is None else value

    return RunArguments(
        program=_name(given.get("program"), "program"),
        method=_method(get("method")),
        steps=_whole(get("steps"), "steps", 1, MAX_STEPS, text),
        lr=_rate(get("lr"), text),
        seed=_whole(get("seed"), "seed", 0, MAX_SEED, text),
        batch=_whole(get("batch"), "batch", 1, MAX_BATCH, text),
        seq_len=_whole(get("seq_len"), "seq_len", 1, MAX_SEQ_LEN, text),
        data=_name(given.get("data"), "data"),
        max_tree_depth=_whole(get("max_tree_depth"), "max_tree_depth", 1, MAX_TREE_DEPTH, text),
        target_accept=_fraction(get("target_accept"), "target_accept", text),
        chains=_whole(get("chains"), "chains", 1, MAX_CHAINS, text),
        mass_matrix=_one_of(get("mass_matrix"), "mass_matrix", MASS_MATRICES),
        init=_one_of(get("init"), "init", INITS),
        engine=_one_of(get("engine"), "engine", ENGINES),
        guide=_guide(get("guide")),
        memory_budget=_budget(given.get("memory_budget", base.memory_budget)),
        subsample=_subsample(given.get("subsample", base.subsample), text),
        device=_one_of(get("device"), "device", DEVICES),
    )


def _name(value: object, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\x00" in value or len(value) > 4096:
        raise RunArgumentError(key, f"{key} must be a non-empty string")
    return value


def _method(value: object) -> str:
    if value not in METHODS:
        raise RunArgumentError(
            "method", f"method must be one of {', '.join(METHODS)}, not {_show(value)}"
        )
    return str(value)


def _guide(value: object) -> str:
    return _one_of(value, "guide", GUIDES)


def _one_of(value: object, key: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise RunArgumentError(
            key, f"{key} must be one of {', '.join(allowed)}, not {_show(value)}"
        )
    return str(value)


def _whole(value: object, key: str, low: int, high: int, text: bool) -> int:
    bad = RunArgumentError(
        key, f"{key} must be a whole number from {low} to {high:,}, not {_show(value)}"
    )
    if isinstance(value, str) and text:
        digits = value.strip().replace("_", "")
        unsigned = digits[1:] if digits.startswith(("+", "-")) else digits
        # isdecimal, not isdigit: int() refuses digits such as '²' that isdigit accepts
        if not unsigned.isdecimal() or len(digits) > 40:
            raise bad
        value = int(digits)
    if isinstance(value, float):
        if not value.is_integer():
            raise bad
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise bad
    return value


def _number(value: object, bad: RunArgumentError, text: bool) -> float:
    """`value` as a float (from a string too, with `text`), or `bad` raised: a bool, any
    other type, or an integer too large for a float."""
    if isinstance(value, str) and text:
        try:
            value = float(value)
        except ValueError:
            raise bad from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad
    try:
        return float(value)
    except OverflowError:
        raise bad from None


def _rate(value: object, text: bool) -> float:
    bad = RunArgumentError("lr", f"lr must be a positive finite number, not {_show(value)}")
    rate = _number(value, bad, text)
    if not math.isfinite(rate) or not 0 < rate <= MAX_LR:
        raise bad
    return rate


def _fraction(value: object, key: str, text: bool) -> float:
    """A number strictly between 0 and 1 (a probability that cannot be certain)."""
    bad = RunArgumentError(key, f"{key} must be a number between 0 and 1, not {_show(value)}")
    number = _number(value, bad, text)
    if not 0.0 < number < 1.0:  # NaN fails both comparisons
        raise bad
    return number


def _budget(value: object) -> int | None:
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        raise RunArgumentError("memory_budget", f"memory_budget: {exc}") from None


def _subsample(value: object, text: bool) -> tuple[str, int] | None:
    """`Plate=rows` (the command line's, and a request's string), `[plate, rows]` or
    `{"plate": ..., "rows": ...}` (JSON): the plate's name and how many rows a step scores."""
    if value is None or value == "":
        return None
    bad = RunArgumentError(
        "subsample", f"subsample must be PLATE=ROWS (e.g. Row=256), not {_show(value)}"
    )
    if isinstance(value, str):
        plate, sep, rows = value.partition("=")
        value = (plate.strip(), rows.strip()) if sep else None
    elif isinstance(value, Mapping):
        value = (value.get("plate"), value.get("rows"))
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise bad
    plate, rows = value
    if not isinstance(plate, str) or not plate.isidentifier():
        raise bad
    return plate, _whole(rows, "subsample", 1, MAX_SUBSAMPLE, True)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ------------------------------------------------------------ launch environment
# Which processes are one process of a run over many (`qvr_core.runs.distributed`).
# Here, torch-free, so the language server can strip them from its workers' environment.

#: What torchrun puts in the environment of each process it starts: where it is in the
#: world and where the world meets. Any of them may be left over in a shell.
LAUNCH_VARIABLES = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_NAME",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
)
#: Set by torchrun (with the other `TORCHELASTIC_*`) in every process it starts: the
#: variables above count only with it, or with `DISTRIBUTED_VARIABLE`.
TORCHRUN_VARIABLE = "TORCHELASTIC_RUN_ID"
#: `QVR_DISTRIBUTED=1`: join the group the variables above name though torchrun did not
#: start this process (another launcher that sets them: mpirun, a scheduler's script).
DISTRIBUTED_VARIABLE = "QVR_DISTRIBUTED"


def asked_to_join(env: Mapping[str, str]) -> bool:
    """Whether `env` makes this process one of a run's many: torchrun started it, or
    `QVR_DISTRIBUTED=1` says so, and it names a world of more than one process. Leftover
    `RANK`/`WORLD_SIZE`/`MASTER_*` alone do not: the run then runs alone."""
    asked = TORCHRUN_VARIABLE in env or env.get(DISTRIBUTED_VARIABLE) == "1"
    return asked and "RANK" in env and env.get("WORLD_SIZE", "1").strip() != "1"


def without_launch(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without the variables that would make a process join a distributed run: a
    child that runs programs (the editor's inference workers) always runs alone."""
    return {
        k: v
        for k, v in env.items()
        if k not in LAUNCH_VARIABLES
        and k != DISTRIBUTED_VARIABLE
        and not k.startswith("TORCHELASTIC_")
    }
