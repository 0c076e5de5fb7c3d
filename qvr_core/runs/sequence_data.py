"""Lengths and masks in a data file: batches of sequences of different lengths, and
per-position observations made at some positions only.

Besides `x` and the observed sites, a `--data` file may hold:

- `x_lengths`: one whole number per example, how many leading positions of the
  input sequence `x` are real. The rest is padding (any value in range): attention
  gives it no weight, scans stop before it, and per-position observations are not
  scored there. The run gets `Padded(x, x_lengths)`, as the Python API takes it.
- `SITE_mask`: for a site observed at every position, one boolean (or 0/1) per
  example and position, true where the site is observed (BERT's masked tokens,
  targets of different lengths). Only those positions are scored; the values
  elsewhere may be anything (-1 is usual). The run gets `Masked(values, mask)`.

A key is these only when no site or data name already has that name. Every
inconsistency is an error naming the key, the example and the position.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch

from qvr_core.check.types import Seq, ValueType
from qvr_core.host.datafile import quoted
from qvr_core.inference.errors import InferenceError
from qvr_core.runtime.padding import Padded
from qvr_core.runtime.program import Masked, Observed

#: The key of the input sequences' lengths, and the suffix of a site's mask.
LENGTHS_KEY = "x_lengths"
MASK_SUFFIX = "_mask"


def mask_key(site: str) -> str:
    return site + MASK_SUFFIX


def optional_keys(observed: Iterable[str], names: Iterable[str]) -> list[str]:
    """The lengths and mask keys a data file may hold besides `names` (the sites and data
    names, which keep their own meaning when one is spelled like these)."""
    taken = set(names)
    keys = [LENGTHS_KEY, *(mask_key(s) for s in observed)]
    return [k for k in keys if k not in taken]


@dataclass(frozen=True)
class SequenceData:
    """What a data file says about its sequences: the input's lengths, the sites' masks,
    as read (validated by `apply`)."""

    lengths: torch.Tensor | None
    masks: dict[str, torch.Tensor]

    @staticmethod
    def take(given: dict[str, torch.Tensor], observed: Iterable[str], source: str) -> SequenceData:
        """The lengths and masks, removed from `given` (the keys `select` allowed)."""
        masks = {
            s: _booleans(given.pop(mask_key(s)), quoted(mask_key(s)), source)
            for s in list(observed)
            if mask_key(s) in given
        }
        return SequenceData(given.pop(LENGTHS_KEY, None), masks)

    def blank(
        self, observations: Mapping[str, torch.Tensor], types: Mapping[str, ValueType], source: str
    ) -> dict[str, torch.Tensor]:
        """The observations with 0 where a mask says unobserved (so an unobserved value
        such as -1 passes the checks of range), each mask checked against its site."""
        out = dict(observations)
        for site, mask in self.masks.items():
            value, t = observations[site], types[site]
            key = quoted(mask_key(site))
            if not isinstance(t, Seq):
                raise InferenceError(
                    f"{source}: {key} marks observed positions, but {quoted(site)} has one "
                    f"value per example ({t.label}), not one per position"
                )
            if value.dim() < 2 or tuple(mask.shape) != tuple(value.shape[:2]):
                want = f"({value.shape[0]}, {value.shape[1]})" if value.dim() >= 2 else "2 axes"
                raise InferenceError(
                    f"{source}: {key} has shape {_shape(mask)} but {quoted(site)} needs one "
                    f"mark per example and position: {want}"
                )
            where = mask.reshape(*mask.shape, *[1] * (value.dim() - 2))
            out[site] = torch.where(where, value, torch.zeros((), dtype=value.dtype))
        return out

    def apply(
        self, x: torch.Tensor, observations: dict[str, torch.Tensor], source: str
    ) -> tuple[torch.Tensor | Padded, dict[str, Observed]]:
        """The input, `Padded` when the file gives lengths, and the observations, `Masked`
        where it gives masks; a mask that marks a position past its example's length is
        an error (that position is padding)."""
        lengths = None if self.lengths is None else self._lengths(x, source)
        out: dict[str, Observed] = dict(observations)
        for site, mask in self.masks.items():
            if lengths is not None and mask.shape[1] == x.shape[1]:
                _within(mask, lengths, site, source)
            out[site] = Masked(observations[site], mask)
        return (x if lengths is None else Padded(x, lengths)), out

    def _lengths(self, x: torch.Tensor, source: str) -> torch.Tensor:
        assert self.lengths is not None
        value, key = self.lengths, quoted(LENGTHS_KEY)
        if x.dim() < 2:
            raise InferenceError(
                f"{source}: {key} gives sequence lengths, but the program's input 'x' is "
                "not a sequence"
            )
        if value.dim() == 2 and value.shape[1] == 1:
            value = value[:, 0]  # a column of lengths
        if tuple(value.shape) != (x.shape[0],):
            raise InferenceError(
                f"{source}: {key} has shape {_shape(value)} but holds one length per example: "
                f"({x.shape[0]},)"
            )
        if value.dtype == torch.bool or (
            value.is_floating_point() and not bool((value == value.round()).all())
        ):
            raise InferenceError(f"{source}: {key} must hold whole numbers (positions counted)")
        value = value.long()
        size = int(x.shape[1])
        bad = ((value < 1) | (value > size)).nonzero()
        if len(bad):
            i = int(bad[0, 0])
            raise InferenceError(
                f"{source}: {key} gives example {i} the length {int(value[i])}, but a length "
                f"is between 1 and the padded length of 'x', {size}"
            )
        return value


def observed_values(observations: Mapping[str, Observed]) -> dict[str, torch.Tensor]:
    """The observed values as a results file keeps them (a mask goes with the inputs)."""
    return {k: v.values if isinstance(v, Masked) else v for k, v in observations.items()}


def data_keys(
    x: torch.Tensor | Padded, observations: Mapping[str, Observed]
) -> dict[str, torch.Tensor]:
    """The input with its lengths and the sites' masks under a data file's keys, as a
    results file keeps them next to the observed values."""
    out = {"x": x.values, LENGTHS_KEY: x.lengths} if isinstance(x, Padded) else {"x": x}
    out.update({mask_key(k): v.mask for k, v in observations.items() if isinstance(v, Masked)})
    return out


def _booleans(mask: torch.Tensor, key: str, source: str) -> torch.Tensor:
    """A mask as booleans: booleans, or numbers that are all 0 or 1."""
    if mask.dtype == torch.bool:
        return mask
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise InferenceError(f"{source}: {key} must hold booleans or 0 and 1 only")
    return mask != 0


def _within(mask: torch.Tensor, lengths: torch.Tensor, site: str, source: str) -> None:
    past = mask & (torch.arange(mask.shape[1]) >= lengths[:, None])
    if bool(past.any()):
        i, t = (int(v) for v in past.nonzero()[0])
        raise InferenceError(
            f"{source}: {quoted(mask_key(site))} marks position {t} of example {i} as "
            f"observed, but {quoted(LENGTHS_KEY)} gives that example {int(lengths[i])} "
            "positions: a padded position cannot be observed"
        )


def _shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ("," if t.dim() == 1 else "") + ")"
