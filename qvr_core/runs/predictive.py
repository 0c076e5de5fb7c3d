"""Posterior predictive draws: each observed site drawn again under each posterior draw.

The editor's predictive check and `qvr run --predictive` need one forward run of the
program per draw. One after another, that is one interpretation of the program per
draw (eight schools: about 0.35 ms each, 1.4 s for 4 x 1,000 draws, as long as a third
of the sampling before it). So the draws are run together: `torch.func.vmap` over a
chunk of draws, each with its own noise (`randomness="different"`), one interpretation
per chunk (`runtime.model.program.drawing_together` says what such a run leaves out).
A program whose run vmap cannot follow (a value read into Python, a sampler vmap has no
rule for), or whose draws together leave float64, is run draw by draw from the same
random state, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.func import vmap

from qvr_core.inference.sites import ProgramLike
from qvr_core.runtime.model.early import reading_early, settle, step_limit
from qvr_core.runtime.model.program import ModelProgram, drawing_together

#: Draws run together in one vmapped run: bounds the memory of one chunk.
CHUNK = 500


def posterior_predictive(
    program: ProgramLike,
    x: Any,
    data: Mapping[str, Any],
    samples: Mapping[str, torch.Tensor],
    names: Sequence[str],
) -> dict[str, torch.Tensor]:
    """Each site of `names` drawn under each draw of `samples` (`(chain, draw, ...)`),
    the data `data` read as the fit read them: `(chain, draw, ...)` arrays by name."""
    chains, draws = next(iter(samples.values())).shape[:2]
    flat = {k: v.reshape(chains * draws, *v.shape[2:]) for k, v in samples.items()}
    state = torch.random.get_rng_state()
    with torch.no_grad():
        drawn = _together(program, x, data, flat, names)
        if drawn is None:
            torch.random.set_rng_state(state)
            drawn = _one_by_one(program, x, data, flat, names)
    return {n: v.reshape(chains, draws, *v.shape[1:]) for n, v in drawn.items()}


def _together(
    program: ProgramLike,
    x: Any,
    data: Mapping[str, Any],
    flat: Mapping[str, torch.Tensor],
    names: Sequence[str],
) -> dict[str, torch.Tensor] | None:
    """The draws from vmapped runs, or None where they cannot be made so. A series the
    model reads before its observe is settled over the whole batch: every vmapped run
    reads the batch's draws of it from the run before (`runtime.model.early`)."""
    early = _read_early(program, x, data, flat)
    wanted = [*names, *(n for n in early if n not in names)]
    # a settling batch is run once per step of its series: one call for all its draws
    chunk = None if early else CHUNK

    def one(
        values: dict[str, torch.Tensor], guess: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        with reading_early(guess):
            run = program.run(x, data, values).values
        return {n: run[n] for n in wanted}

    def batch(
        guess: dict[str, torch.Tensor],
    ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        with drawing_together():
            out: dict[str, torch.Tensor] = vmap(one, randomness="different", chunk_size=chunk)(
                dict(flat), guess
            )
        return out, {n: out[n] for n in early}

    try:
        if early:
            total = next(iter(flat.values())).shape[0]
            guess = {n: s.expand(total, *s.shape).clone() for n, s in early.items()}
            drawn = settle(batch, guess, step_limit(early), getattr(program, "name", "?"))
        else:
            drawn = batch({})[0]
    except Exception:  # a value read into Python, a sampler vmap cannot batch
        return None
    drawn = {n: drawn[n] for n in names}
    finite = all(bool(torch.isfinite(v).all()) for v in drawn.values() if v.is_floating_point())
    return drawn if finite and drawn.keys() == set(names) else None


def _read_early(
    program: ProgramLike, x: Any, data: Mapping[str, Any], flat: Mapping[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """The observed series the model reads before its observe, each as zeros of its
    shape: found by one run of the first draw (which settles them itself); none for a
    program that reads none, or is no model program."""
    model = getattr(program, "program", program)  # a summed model's own program
    if not isinstance(model, ModelProgram):
        return {}
    if not model.early_names:
        state = torch.random.get_rng_state()
        program.run(x, data, {k: v[0] for k, v in flat.items()})
        torch.random.set_rng_state(state)
    return {n: model.series_zeros(n) for n in sorted(model.early_names)}


def _one_by_one(
    program: ProgramLike,
    x: Any,
    data: Mapping[str, Any],
    flat: Mapping[str, torch.Tensor],
    names: Sequence[str],
) -> dict[str, torch.Tensor]:
    total = next(iter(flat.values())).shape[0]
    out: dict[str, list[torch.Tensor]] = {n: [] for n in names}
    for i in range(total):
        values = program.run(x, data, {k: v[i] for k, v in flat.items()}).values
        for n in names:
            out[n].append(values[n])
    return {n: torch.stack(v) for n, v in out.items()}
