"""A checked `parser(...)` as a torch module: quivers' differentiable CKY chart parser.

What it computes is quivers 0.25.2's `ChartParser` (`stochastic/parsers.py`, `span.py`)
in the log semiring, from the rules the checker instantiated (`check/chart_grammar.py`):

- a lexicon of learned logits, one row per token and one column per category, drawn
  N(0, 0.1^2) as quivers draws them; a token's cell is the row's log-softmax;
- each span (i, j), shortest first: for every binary rule (C, L, R) and split k, the
  weight of L over (i, k) plus R's over (k, j) plus the rule's learned log weight
  (0 at the start), log-summed over splits and over the rules concluding C;
- after the lexicon and after each span's binary step, quivers' three unary rounds
  (`UnarySpanDeduction(iterations=3)`): each round log-adds to the cell, for every unary
  rule (C, P), P's weight plus the rule's. This is quivers' approximation of the unary
  closure, copied as it is: a rule's weight is added once per round;
- a sentence's score is the start category's weight over the whole sentence.

The one departure: where every term of a log-sum is -inf (a category no derivation
reaches) quivers' `torch.logsumexp` gives the gradient NaN, which poisons every
parameter it meets; here that gradient is 0, its value, and the scores are the same.
"""

from __future__ import annotations

import torch
from torch import nn

from qvr_core.check.chart_grammar import ChartGrammar
from qvr_core.check.types import Arrow
from qvr_core.runtime.errors import QvrError, QvrRuntimeError
from qvr_core.runtime.morphisms import Morphism

_NEG_INF = float("-inf")


class _LogSumExp(torch.autograd.Function):
    """`torch.logsumexp` whose gradient is 0 where every term is -inf."""

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, dim: int
    ) -> torch.Tensor:
        out = torch.logsumexp(x, dim)
        ctx.save_for_backward(x, out)
        ctx.dim = dim  # type: ignore[attr-defined]  # why: a Function's ctx takes any attribute
        return out

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor
    ) -> tuple[torch.Tensor, None]:
        x, out = ctx.saved_tensors  # type: ignore[attr-defined]  # why: set by save_for_backward
        dim = ctx.dim  # type: ignore[attr-defined]  # why: set in forward
        weights = torch.exp(x - out.unsqueeze(dim)).nan_to_num(nan=0.0)
        return grad.unsqueeze(dim) * weights, None


def log_sum(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Log-sum over `dim` (the log semiring's plus), safe where all terms are -inf."""
    out = _LogSumExp.apply(x, dim)
    assert isinstance(out, torch.Tensor)
    return out


def _groups(conclusions: list[int], n_categories: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The categories some rule concludes, and per category the indices of its rules,
    padded with an index one past the last rule (a column of -inf)."""
    by_target: dict[int, list[int]] = {}
    for r, c in enumerate(conclusions):
        by_target.setdefault(c, []).append(r)
    targets = sorted(by_target)
    width = max((len(v) for v in by_target.values()), default=0)
    pad = len(conclusions)
    rows = [by_target[t] + [pad] * (width - len(by_target[t])) for t in targets]
    return torch.tensor(targets, dtype=torch.long), torch.tensor(rows, dtype=torch.long).reshape(
        len(targets), width
    )


class ChartParser(Morphism):
    """`[Terminal] -> Real`: a sentence of token indices to its log weight.

    Called as quivers' parser is: `parser(tokens)` with int tokens of shape (length,) or
    (batch, length) gives the score, of shape () or (batch,)."""

    _b_left: torch.Tensor
    _b_right: torch.Tensor
    _u_input: torch.Tensor

    def __init__(self, arrow: Arrow, label: str, grammar: ChartGrammar) -> None:
        super().__init__(arrow, label)
        self.grammar = grammar
        n_cat = len(grammar.categories)
        self.lexicon_logits = nn.Parameter(torch.randn(grammar.terminals, n_cat) * 0.1)
        self.binary_weights = nn.Parameter(torch.zeros(len(grammar.binary)))
        self.unary_weights = nn.Parameter(torch.zeros(len(grammar.unary)))
        binary = list(zip(*grammar.binary, strict=True)) or [(), (), ()]
        unary = list(zip(*grammar.unary, strict=True)) or [(), ()]
        self.register_buffer("_b_left", torch.tensor(binary[1], dtype=torch.long))
        self.register_buffer("_b_right", torch.tensor(binary[2], dtype=torch.long))
        self.register_buffer("_u_input", torch.tensor(unary[1], dtype=torch.long))
        for kind, conclusions in (("b", list(binary[0])), ("u", list(unary[0]))):
            targets, rows = _groups(conclusions, n_cat)
            self.register_buffer(f"_{kind}_targets", targets)
            self.register_buffer(f"_{kind}_rows", rows)

    @staticmethod
    def bytes_for(grammar: ChartGrammar) -> int:
        """The memory its parameters take in torch's default float type."""
        return grammar.parameters * torch.get_default_dtype().itemsize

    @property
    def stochastic(self) -> bool:
        return False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """quivers' call: the score of each sentence."""
        tokens = self._tokens(x)
        scores = self.score(tokens if tokens.ndim == 2 else tokens.unsqueeze(0))
        return scores if tokens.ndim == 2 else scores.squeeze(0)

    def _rsample(self, x: torch.Tensor) -> torch.Tensor:
        return self.score(self._tokens(x)).unsqueeze(-1)

    _mean = _rsample

    def _log_prob(self, x: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        raise QvrError(f"{self.label} scores sentences: it has no density of values")

    def check_input(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self._tokens(x)
        if tokens.ndim != 2:
            raise QvrRuntimeError(
                f"{self.label}: input: expected (batch, length) token indices, got shape "
                f"{tuple(tokens.shape)}"
            )
        return tokens

    def _tokens(self, x: object) -> torch.Tensor:
        """Token indices of one sentence (length,) or a batch (batch, length), checked."""
        what = f"{self.label}: input"
        if not isinstance(x, torch.Tensor) or x.is_floating_point() or x.dtype == torch.bool:
            raise QvrRuntimeError(f"{what}: expected an int tensor of token indices")
        if x.ndim not in (1, 2):
            raise QvrRuntimeError(
                f"{what}: expected (length,) or (batch, length) token indices, got shape "
                f"{tuple(x.shape)}"
            )
        if x.shape[-1] == 0:
            raise QvrRuntimeError(f"{what}: cannot parse an empty sentence")
        n = self.grammar.terminals
        if x.numel() and (int(x.min()) < 0 or int(x.max()) >= n):
            raise QvrRuntimeError(
                f"{what}: a token index is outside 0..{n - 1} ({self.grammar.terminal} has "
                f"{n} values)"
            )
        return x.long()

    def score(self, tokens: torch.Tensor) -> torch.Tensor:
        """The start category's log weight over each whole sentence, (batch,)."""
        batch, length = tokens.shape
        lexicon = torch.log_softmax(self.lexicon_logits, dim=-1)[tokens]  # (batch, n, C)
        cells: dict[tuple[int, int], torch.Tensor] = {}
        for i in range(length):
            cells[(i, i + 1)] = self._unary(lexicon[:, i, :])
        for span in range(2, length + 1):
            for i in range(length - span + 1):
                j = i + span
                cells[(i, j)] = self._unary(self._binary(cells, i, j, batch))
        return cells[(0, length)][:, self.grammar.start]

    def _binary(
        self, cells: dict[tuple[int, int], torch.Tensor], i: int, j: int, batch: int
    ) -> torch.Tensor:
        n_cat = len(self.grammar.categories)
        if not self.grammar.binary:
            w = self.lexicon_logits
            return torch.full((batch, n_cat), _NEG_INF, dtype=w.dtype, device=w.device)
        left = torch.stack([cells[(i, k)] for k in range(i + 1, j)])  # (splits, batch, C)
        right = torch.stack([cells[(k, j)] for k in range(i + 1, j)])
        per_split = left[..., self._b_left] + right[..., self._b_right] + self.binary_weights
        return self._collect(log_sum(per_split, 0), "b", n_cat)

    def _unary(self, cell: torch.Tensor) -> torch.Tensor:
        if not self.grammar.unary:
            return cell
        n_cat = cell.shape[-1]
        for _ in range(self.grammar.iterations):
            added = self._collect(cell[:, self._u_input] + self.unary_weights, "u", n_cat)
            cell = log_sum(torch.stack([cell, added]), 0)
        return cell

    def _collect(self, scores: torch.Tensor, kind: str, n_cat: int) -> torch.Tensor:
        """Log-sum rule scores (batch, rules) into their conclusions' columns (batch, C);
        a category no rule concludes gets -inf."""
        targets: torch.Tensor = getattr(self, f"_{kind}_targets")
        rows: torch.Tensor = getattr(self, f"_{kind}_rows")
        pad = torch.full((scores.shape[0], 1), _NEG_INF, dtype=scores.dtype, device=scores.device)
        grouped = torch.cat([scores, pad], dim=1)[:, rows]  # (batch, targets, width)
        out = torch.full_like(scores[:, :1].expand(-1, n_cat), _NEG_INF)
        index = targets.unsqueeze(0).expand(scores.shape[0], -1)
        return out.scatter(1, index, log_sum(grouped, 2))

    def extra_repr(self) -> str:
        g = self.grammar
        return (
            f"{self.label} : {self.dom.label} -> {self.cod.label}; categories="
            f"{len(g.categories)}, terminals={g.terminals}, binary_rules={len(g.binary)}, "
            f"unary_rules={len(g.unary)}"
        )
