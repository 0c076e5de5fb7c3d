"""QVR601: a program too large to run, reported while the user types.

A whole-module pass, run after the others when nothing is an error: each
exported program is sized for an SVI run as `qvr run` would size it (a seed
program by `qvr_core.sizing.resources` at the command line's default batch and
sequence length, a model program by `qvr_core.sizing.model_resources` from its
plates, enumerated scopes and latent values), and a program over the memory
budget gets a warning at the declaration that needs the most (a morphism with
a huge dimension, a `stack` of many copies, a `repeat` of many applications, a
site over a huge plate, a `marginalize` whose body runs too many times), with
the program as related information.
"""

from __future__ import annotations

import logging
import threading
from functools import cached_property, lru_cache
from typing import Any

from qvr_core.builtins.objects import PLATE_KINDS
from qvr_core.check.model import Model as CheckedModel
from qvr_core.check.module import LetInfo, ProgramInfo
from qvr_core.sizing.model_resources import estimate_model
from qvr_core.sizing.resources import (
    CHECK_BATCH,
    CHECK_SEQ_LEN,
    Estimate,
    Model,
    default_budget,
    estimate,
)
from qvr_core.text import rules
from qvr_core.text.diagnostics import Diagnostic, Related, make
from qvr_core.text.units import format_bytes

log = logging.getLogger(__name__)


@lru_cache(maxsize=1)
def checker_budget() -> int:
    """The default budget, read once per process so that diagnostics do not flicker."""
    return default_budget()


class _Tables:
    """The checker's tables as `resources.estimate` reads them (made when first read: while
    every exported program's size is remembered, only `lookup` is asked)."""

    def __init__(self, morphisms: Any, lets: Any, programs: Any) -> None:
        self._morphisms, self._lets, self._programs = morphisms, lets, programs

    @cached_property
    def morphisms(self) -> dict[str, Any]:
        return dict(self._morphisms.items())

    @cached_property
    def lets(self) -> dict[str, Any]:
        return {k: v for k, v in self._lets.items() if isinstance(v, LetInfo)}

    @cached_property
    def programs(self) -> dict[str, Any]:
        return {k: v for k, v in self._programs.items() if _sized(v)}

    @cached_property
    def models(self) -> dict[str, CheckedModel]:
        return {k: v for k, v in self._programs.items() if isinstance(v, CheckedModel)}

    def lookup(self, name: str) -> object:
        """`morphisms.get(name) or lets.get(name) or programs.get(name)`, without the tables."""
        found = dict.get(self._morphisms, name)  # (a plain read: the table notes nothing)
        if found:
            return found
        let = self._lets.get(name)
        if isinstance(let, LetInfo):  # (infos are always true)
            return let
        program = self._programs.get(name)
        return program if _sized(program) else None


def _sized(info: object) -> bool:
    """Whether `info` is a typed program's, which `estimate` sizes."""
    return isinstance(info, ProgramInfo) and info.type is not None


class _ModelTables:
    """The checker's tables as `model_resources.estimate_model` reads them."""

    def __init__(self, models: dict[str, CheckedModel], objects: Any) -> None:
        self.models = models
        self.objects = dict(objects.items())


# An editor re-checks on every keystroke, and the checker keeps the infos of declarations an
# edit cannot have changed (the same objects): a program whose info and every declaration it
# reaches are the very objects sized before needs no sizing again. Keyed by id, holding the
# objects (so an id is not reused while its entry lives); bounded.
_CACHE: dict[int, tuple[object, tuple[tuple[str, object], ...], int]] = {}
_CACHE_SIZE = 20_000
_lock = threading.Lock()


def _cached_total(tables: _Tables, prog: ProgramInfo) -> int | None:
    with _lock:
        entry = _CACHE.get(id(prog))
    if entry is None or entry[0] is not prog:
        return None
    lookup = tables.lookup  # (a loop, not `any` over a generator: hundreds of programs)
    for n, info in entry[1]:
        if lookup(n) is not info:
            return None
    return entry[2]


def _remember(tables: _Tables, prog: ProgramInfo, reached: frozenset[str], total: int) -> None:
    deps = tuple((n, tables.lookup(n)) for n in sorted(reached))
    with _lock:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[id(prog)] = (prog, deps, total)


def size_warnings(
    ctx: Any, env: Any, exports: tuple[str, ...], budget: int | None
) -> list[Diagnostic]:
    """QVR601 for every exported program whose default run is over `budget` bytes."""
    limit = budget if budget is not None else checker_budget()
    tables = _Tables(env.morphisms, env.lets, env.programs)
    found: dict[tuple[int, int], Diagnostic] = {}
    shared: Model | None = None  # one for all the exports, linear over them; made when needed
    models: _ModelTables | None = None
    for name in exports:
        prog = env.programs.get(name)
        if isinstance(prog, CheckedModel):
            if models is None:
                models = _ModelTables(tables.models, ctx.objects)
            _model_warning(ctx, models, name, limit, found)
            continue
        if not _sized(prog):
            continue
        try:
            total = _cached_total(tables, prog)
            if total is None:
                if shared is None:
                    shared = Model(tables.morphisms, tables.lets, tables.programs)
                need = estimate(
                    tables, name, batch=CHECK_BATCH, seq_len=CHECK_SEQ_LEN, model=shared
                )
                _remember(tables, prog, need.reached, need.total)
                total = need.total
            if total <= limit:
                continue
            need = estimate(tables, name, batch=CHECK_BATCH, seq_len=CHECK_SEQ_LEN)  # its needs
        except Exception:  # a bug in sizing must not cost the other diagnostics
            log.exception("sizing program %s failed", name)
            continue
        run = f"for an SVI run at batch {CHECK_BATCH}, seq_len {CHECK_SEQ_LEN}"
        _warn(ctx, need, prog.decl, name, limit, run, "a run at these sizes", found)
    return list(found.values())


def _model_warning(
    ctx: Any, tables: _ModelTables, name: str, limit: int, found: dict[tuple[int, int], Diagnostic]
) -> None:
    """QVR601 for model program `name` when an SVI run of it is over `limit` bytes."""
    model = tables.models[name]
    if model.runtime_gaps or any(p.kind in PLATE_KINDS for p in model.params):
        return  # not run (the run says why): a template, or what the runtime lacks
    try:
        # the scope tree: the sums of discrete latents are the run's to size (quadratic
        # to plan in a long chain of them, too slow for every keystroke)
        need = estimate_model(tables, name, method="svi", summed=False)
    except Exception:  # a bug in sizing must not cost the other diagnostics
        log.exception("sizing model program %s failed", name)
        return
    if need.total <= limit:
        return
    _warn(ctx, need, model.decl, name, limit, "for an SVI run", "a run", found)


def _warn(
    ctx: Any,
    need: Estimate,
    decl: Any,
    name: str,
    limit: int,
    run: str,
    refused: str,
    found: dict[tuple[int, int], Diagnostic],
) -> None:
    """The warning at the declaration that needs the most (once per place)."""
    culprit = need.culprit(limit)
    if culprit is None:
        return
    span = ctx.real(culprit.owner, culprit.span)
    if (span.start, span.end) in found:
        return
    message = (
        f"{culprit.label} {culprit.reason}: program {name} would need about "
        f"{format_bytes(need.total)} {run}, over the memory budget of {format_bytes(limit)}, "
        f"so {refused} is refused"
    )
    where = ctx.real(decl, decl.name.span)
    found[(span.start, span.end)] = make(
        rules.PROGRAM_TOO_LARGE, message, span, related=(Related(where, f"program {name}"),)
    )
