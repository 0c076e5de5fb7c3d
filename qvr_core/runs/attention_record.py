"""The attention weights of a run, for its first example: what the run view draws.

After a run, each attention module of the compiled program
(`runtime.attention.Attention`: `multihead` and its causal and cross forms)
gives its weights `(heads, queries, keys)` for the first example of the input.
They come from extra forward passes over the whole batch (so data names and
per-example latents keep the shapes the run gave them), under what the method
fitted; every latent is given a value, so a pass draws nothing:

- SVI: the fitted parameters, every latent at its mean under the guide (the
  guide's summary draws): the network as trained, not one noisy draw of it;
- NUTS: the mean of the weights over `NUTS_DRAWS` evenly spaced draws of the
  first chain. A mean of weights is still an attention (rows sum to 1, hidden
  keys get 0), where the mean of the parameters of a model whose heads can trade
  places may be no draw's at all; one chain, because chains may have settled on
  different orders of the heads;
- prior: the run's parameters, every latent at its mean over the prior draws.

Positions past the example's length (a `Padded` input) are cut off where the
run masks them: the keys of self- and cross-attention, the queries of
self-attention. At most `MAX_ATTENTIONS` modules, `MAX_HEADS` heads and
`MAX_POSITIONS` positions per axis are kept (8 x 8 x 32 x 32 numbers, under
half a megabyte of JSON), so a large model's summary stays small.

A module is labelled by where the source applies it: the `define` its step
names, the program of that step and the copy of a `stack` ("self_attention in
encoder_block 1 of 2"). A module reached more than once (a `repeat`, a let used
twice) is recorded once, with the weights of its last application.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from qvr_core.check import lowered as ir
from qvr_core.check.types import Seq
from qvr_core.runs.summary import AttentionWeights
from qvr_core.runtime.attention import Attention
from qvr_core.runtime.combinators import Stack
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.padding import Padded, unpad
from qvr_core.runtime.program import ProgramModule
from qvr_core.runtime.tensors import elem

MAX_ATTENTIONS = 8
MAX_HEADS = 8
MAX_POSITIONS = 32
#: Draws of NUTS's first chain whose weights are averaged.
NUTS_DRAWS = 8
#: The longest text of one position's input (`tokens`).
_TOKEN_TEXT = 40

SVI_BASIS = "fitted parameters, latent sites at their mean under the guide"
PRIOR_BASIS = "the run's parameters, latent sites at their mean over the prior draws"

#: One forward pass of the run's program over its whole input.
Pass = Callable[[], object]


def nuts_basis(draws: int) -> str:
    return f"mean over {draws} posterior draw{'s' if draws != 1 else ''} of chain 1"


@dataclass(frozen=True)
class Placed:
    """An attention module of a program and where the source applies it."""

    module: Attention
    label: str  # "self_attention in encoder_block 1 of 2"
    site: str  # "encoder_block.a"


def has_attention(program: object) -> bool:
    return isinstance(program, nn.Module) and any(
        isinstance(m, Attention) for m in program.modules()
    )


def attention_modules(program: nn.Module) -> list[Placed]:
    """The program's attention modules in the order they were compiled, labelled; two
    with the same label are told apart by their step."""
    placed = [
        _place(program, path, module)
        for path, module in program.named_modules()
        if isinstance(module, Attention)
    ]
    counts = Counter(p.label for p in placed)
    return [
        replace(p, label=f"{p.label} at {p.site}") if counts[p.label] > 1 else p for p in placed
    ]


def _place(root: nn.Module, path: str, module: Attention) -> Placed:
    """Walk `path` from `root`, noting each program step and `stack` copy passed."""
    steps: list[tuple[ProgramModule, str]] = []
    copies: list[tuple[int, Stack, nn.Module]] = []
    parts = path.split(".")
    current = root
    for i, part in enumerate(parts):
        following = parts[i + 1] if i + 1 < len(parts) else None
        if isinstance(current, ProgramModule) and part == "steps" and following is not None:
            steps.append((current, following))
        elif isinstance(current, ProgramModule) and part.startswith("_step_"):
            steps.append((current, part.removeprefix("_step_")))
        elif isinstance(current, Stack) and part == "parts" and following is not None:
            copies.append((int(following), current, current.parts[int(following)]))
        current = current.get_submodule(part)
    if not steps:  # an exported let: no program step names it
        return Placed(module, module.label, module.label)
    program, step = steps[-1]
    source = next((s.source for s in program.info.sites if s.name == step), None)
    name = source.name if isinstance(source, ir.Named) else module.label
    context: list[str] = []
    named_program = program is root
    for index, stack, copy in copies:
        count = len(stack.parts)
        if copy is program:
            context.append(f"in {program.label} {index + 1} of {count}")
            named_program = True
        else:
            context.append(f"copy {index + 1} of {count} of {stack.label}")
    if not named_program:
        context.insert(0, f"in {program.label}")
    joined = ", ".join(context)
    label = f"{name} {joined}" if joined.startswith("in ") else ", ".join([name, *context])
    return Placed(module, label, f"{program.label}.{step}")


def record_attention(
    program: object, passes: Sequence[Pass], x: object, basis: str
) -> tuple[AttentionWeights, ...]:
    """Each attention's weights for the first example of `x`, averaged over `passes`.

    A program without attention costs nothing (no pass runs). A pass that fails
    (the values it was given do not fit the program) records nothing: the
    weights illustrate a run that has succeeded, they never fail it.
    """
    if not isinstance(program, nn.Module) or not passes:
        return ()
    placed = attention_modules(program)[:MAX_ATTENTIONS]
    if not placed:
        return ()
    sums: list[torch.Tensor | None] = [None] * len(placed)
    counts = [0] * len(placed)
    try:
        with torch.no_grad():
            for run in passes:
                run()
                for i, p in enumerate(placed):
                    w = p.module.last_weights
                    if w is None:
                        continue
                    first = w.reshape(-1, *w.shape[-3:])[0].to(torch.float64)
                    previous = sums[i]
                    sums[i] = first if previous is None else previous + first
                    counts[i] += 1
    except (QvrError, QvrRuntimeError, RuntimeError, ValueError):
        return ()
    values, lengths = unpad(x) if isinstance(x, torch.Tensor | Padded) else (None, None)
    records = []
    for p, total, n in zip(placed, sums, counts, strict=True):
        if total is not None:
            records.append(_record(p, total / n, values, lengths, basis, program))
    return tuple(records)


def _record(
    placed: Placed,
    weights: torch.Tensor,
    x: torch.Tensor | None,
    lengths: torch.Tensor | None,
    basis: str,
    program: nn.Module,
) -> AttentionWeights:
    """`weights` `(heads, queries, keys)` of the first example, cut and capped."""
    module = placed.module
    kind = str(getattr(module, "kind", "self"))
    heads, queries, keys = (int(n) for n in weights.shape)
    padded = int(x.shape[1]) if x is not None and x.dim() >= 2 else None
    tokens = None
    if padded is not None and queries == padded and keys == padded:
        tokens = _tokens(program, x, min(padded, MAX_POSITIONS))
    if lengths is not None and padded is not None and lengths.numel():
        length = int(lengths.reshape(-1)[0])
        if kind in ("self", "cross") and keys == padded:
            keys = min(keys, length)
        if kind == "self" and queries == padded:
            queries = min(queries, length)
    shown = weights[:MAX_HEADS, : min(queries, MAX_POSITIONS), : min(keys, MAX_POSITIONS)]
    if tokens is not None:
        tokens = tokens[: max(shown.shape[1], shown.shape[2])]
    return AttentionWeights(
        label=placed.label,
        site=placed.site,
        combinator=module.label,
        kind=kind,
        heads=heads,
        queries=queries,
        keys=keys,
        basis=basis,
        weights=tuple(tuple(tuple(row) for row in head) for head in shown.tolist()),
        tokens=tokens,
    )


def _tokens(program: nn.Module, x: torch.Tensor | None, count: int) -> tuple[str, ...] | None:
    """The first example's input at its first `count` positions, as text, when the
    program reads a sequence of discrete values (tokens, or tuples of indices)."""
    dom = getattr(program, "dom", None)
    if x is None or not isinstance(dom, Seq) or not elem(dom).discrete:
        return None
    texts = []
    for value in x[0, :count].tolist():
        text = (
            f"({', '.join(str(int(v)) for v in value)})"
            if isinstance(value, list)
            else str(int(value))
        )
        texts.append(text[:_TOKEN_TEXT])
    return tuple(texts)


def attention_data(records: Sequence[AttentionWeights]) -> dict[str, Any]:
    """What `--output` keeps in `constant_data`: `attention_1`, ... `(head, query, key)`
    in the summary's order, and `attention_label` naming each."""
    out: dict[str, Any] = {
        f"attention_{i}": np.asarray(r.weights, dtype=np.float64) for i, r in enumerate(records, 1)
    }
    out["attention_label"] = np.asarray([r.label for r in records])
    return out
