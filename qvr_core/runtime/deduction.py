"""Running a `deduction`: quivers' weighted agenda parser over a sentence.

A sentence's words become axioms: for the word at position i, each lexicon entry of that
word gives the item `span(i, i + 1, C)` (with its logical form when the deduction carries
forms) at the entry's weight. The agenda pops items first in, first out; an item pushed
again while it waits is merged with the semiring's plus. A popped item's change is
added to the chart, and every rule with a premise it matches fires: its other premises
are matched against the chart, variables shared between premises taking one value, and
the conclusion, built from the bindings, is pushed at the product of the premises'
weights and the rule's own. This is quivers' classic engine (0.25.2,
`stochastic/agenda.py`, `dsl/compiler/deductions.py`) in its semantics:

- the semirings LogProb (log-sum-exp, +), Viterbi (max, +), Boolean (or, and) and
  Counting (+, x); an item's weight is the plus over its derivations (the inside weight);
- a learnable lexicon entry and a learnable rule each hold a log weight, the rule's one
  per binding of all its variables (positions included, as quivers keys them), started
  at 0 and read only in the two log semirings; `bounded` makes a rule's weight
  -softplus(raw) - log(number of bounded rules); `parent=` adds the parent's weight at
  the same binding;
- `depth=N` refuses a conclusion whose category nests deeper than N;
- the goal is the plus over the items of the `start` category over the whole sentence
  (`span(0, n, S)`), and the semiring's zero when there is none: a sentence without a
  parse, an unknown word, an empty sentence;
- a deduction that keeps deriving (a cycle whose weight does not settle within
  `tolerance`) is stopped after `max_iterations` pops with an error.

Where quivers' two engines differ, qvr takes the reading both agree on in the cases
they agree (documented in docs/language.md): a chart item that matches two premises of
one rule counts each derivation once (quivers' classic engine counts it twice), and a
learnable entry weighs the semiring's one in Boolean and Counting (the classic engine
injects its raw 0, which is those semirings' zero).
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from qvr_core.builtins.semirings import BOOLEAN, COUNTING, LOG_PROB, VITERBI
from qvr_core.check.deduction_system import ATOM, VARIABLE, Deduction, Entry, Rule, Term
from qvr_core.check.deduction_terms import SPAN
from qvr_core.runtime.deduction_items import item as read_item
from qvr_core.runtime.errors import QvrRuntimeError

Bindings = dict[str, Any]
Weight = torch.Tensor


# ------------------------------------------------------------------ semirings


@dataclass(frozen=True)
class SemiringOps:
    """A semiring's operations on 0-d tensors."""

    plus: Callable[[Weight, Weight], Weight]
    times: Callable[[Weight, Weight], Weight]
    zero: float
    one: float


#: The operations of each semiring of the registry (`builtins.semirings`), by its name.
OPS: dict[str, SemiringOps] = {
    LOG_PROB.name: SemiringOps(torch.logaddexp, torch.add, -math.inf, 0.0),
    VITERBI.name: SemiringOps(torch.maximum, torch.add, -math.inf, 0.0),
    BOOLEAN.name: SemiringOps(torch.maximum, torch.mul, 0.0, 1.0),
    COUNTING.name: SemiringOps(torch.add, torch.mul, 0.0, 1.0),
}


# ------------------------------------------------------------------ terms


def match(pattern: Term, item: Any, bindings: Bindings) -> Bindings | None:
    """The bindings under which `pattern` is `item` (extending `bindings`), or None."""
    if isinstance(pattern, tuple) and len(pattern) == 2 and pattern[0] == VARIABLE:
        name = pattern[1]
        if name in bindings:
            return bindings if bindings[name] == item else None
        return {**bindings, name: item}
    if isinstance(pattern, tuple):
        if not isinstance(item, tuple) or len(item) != len(pattern):
            return None
        for p, i in zip(pattern, item, strict=True):
            found = match(p, i, bindings)
            if found is None:
                return None
            bindings = found
        return bindings
    return bindings if pattern == item else None


def instantiate(pattern: Term, bindings: Bindings) -> Any:
    """`pattern` with its variables replaced; KeyError for a variable no premise bound."""
    if isinstance(pattern, tuple) and len(pattern) == 2 and pattern[0] == VARIABLE:
        return bindings[pattern[1]]
    if isinstance(pattern, tuple):
        return tuple(instantiate(p, bindings) for p in pattern)
    return pattern


def category_depth(term: Any) -> int:
    """How deep a category nests (quivers' `_category_depth`): 0 for an atom or a
    variable, a span's category's depth (its form ignored), else 1 + its deepest part."""
    if not isinstance(term, tuple) or not term or term[0] in (ATOM, "var"):
        return 0
    if term[0] == SPAN and len(term) >= 4:
        return category_depth(term[3])
    return 1 + max((category_depth(a) for a in term[1:]), default=-1)


def show(value: Any) -> str:
    """A bound value as quivers' reference machine names a rule weight's binding: ints in
    decimal, atoms by name, applied terms `f(a,b)`."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] in (ATOM, "var"):
        return str(value[1])
    if isinstance(value, tuple) and value:
        return f"{value[0]}({','.join(show(v) for v in value[1:])})"
    return str(value)


# ------------------------------------------------------------------ weights


class DeductionWeights(nn.Module):
    """The learnable log weights of one deduction: one per lexicon entry word and
    category, and one per rule and binding, made the first time the rule fires with it
    (as quivers allocates them; an optimiser built before a first run does not see the
    rule weights). `name(...)` gives each its quivers name (`PCFG.lex.0`,
    `PCFG.rule.s_np_vp:0|3|2`)."""

    def __init__(self, deduction: Deduction, entries: int) -> None:
        super().__init__()
        self.deduction_name = deduction.name
        self.lexicon = nn.Parameter(torch.zeros(entries, dtype=torch.float64))
        self.rules = nn.ParameterDict()
        self._keys: dict[str, str] = {}  # quivers' name -> the ParameterDict's key

    def rule(self, rule: str, binding: str) -> Weight:
        name = f"{self.deduction_name}.rule.{rule}:{binding}"
        key = self._keys.get(name)
        if key is None:
            key = self._keys[name] = f"w{len(self._keys)}"
            self.rules[key] = nn.Parameter(
                torch.zeros((), dtype=torch.float64, device=self.lexicon.device)
            )
        return self.rules[key]

    def named_weights(self) -> dict[str, float]:
        """Every weight by its quivers name."""
        out = {
            f"{self.deduction_name}.lex.{i}": float(w) for i, w in enumerate(self.lexicon.detach())
        }
        out.update({name: float(self.rules[key].detach()) for name, key in self._keys.items()})
        return out


@dataclass(frozen=True)
class Axiom:
    """One word's reading: the lexicon entry's index among quivers' expanded entries
    (the weight's), its category and logical form."""

    index: int
    category: Term
    form: Term | None
    learnable: bool


def expand(lexicon: Sequence[Entry]) -> dict[str, list[Axiom]]:
    """quivers' flat list of lexicon entries (each word of each entry, then each of its
    categories), indexed in that order, grouped by word."""
    by_word: dict[str, list[Axiom]] = {}
    index = 0
    for entry in lexicon:
        for word in entry.words:
            for category in entry.categories:
                by_word.setdefault(word, []).append(
                    Axiom(index, category, entry.form, entry.learnable)
                )
                index += 1
    return by_word


def entry_count(lexicon: Sequence[Entry]) -> int:
    return sum(len(e.words) * len(e.categories) for e in lexicon)


# ------------------------------------------------------------------ the engine


@dataclass
class Chart:
    """What a run derived: every item's weight, and the goal's."""

    items: dict[Any, Weight]
    goal_items: list[Any]
    semiring: str
    iterations: int

    def weight(self, written: str | Any) -> Weight:
        """The weight of one item (written as in a rule, `"path(a, d)"`, or already read);
        an item the run did not derive is refused, naming it (quivers' `ChartView.weight`)."""
        found = _read(written)
        if found not in self.items:
            raise QvrRuntimeError(f"{show(found)} is not in the chart: nothing derived it")
        return self.items[found]

    def goal_weight(self) -> Weight:
        ops = OPS[self.semiring]
        weights = [self.items[i] for i in self.goal_items]
        if not weights:
            return torch.tensor(ops.zero, dtype=torch.float64)
        total = weights[0]
        for w in weights[1:]:
            total = ops.plus(total, w)
        return total


class DeductionEngine:
    """One checked deduction, ready to parse sentences."""

    def __init__(self, deduction: Deduction, weights: DeductionWeights | None = None) -> None:
        self.deduction = deduction
        self.ops = OPS[deduction.semiring.name]
        self.reads_weights = deduction.semiring.reads_weights
        self.axioms = expand(deduction.lexicon)
        self.weights = weights or DeductionWeights(deduction, entry_count(deduction.lexicon))
        self.rules = {r.name: r for r in deduction.rules}
        bounded = [r for r in deduction.rules if r.bounded and (r.learnable or r.parent)]
        self.cap = math.log(len(bounded)) if len(bounded) > 1 else 0.0

    # -------------------------------------------------------------- weights

    def _one(self) -> Weight:
        return torch.tensor(self.ops.one, dtype=torch.float64)

    def _entry_weight(self, axiom: Axiom) -> Weight:
        if axiom.learnable and self.reads_weights:
            return self.weights.lexicon[axiom.index]
        return self._one()

    def _own(self, rule: Rule, bindings: Bindings) -> Weight | None:
        """A rule's own log weight at these bindings, with its parents'; None for none."""
        if not self.reads_weights:
            return None
        binding = "|".join(show(bindings[v]) for v in sorted(bindings))
        total: Weight | None = None
        seen: set[str] = set()
        current: Rule | None = rule
        while current is not None and current.name not in seen:
            seen.add(current.name)
            if current.learnable or current.parent is not None:
                raw = self.weights.rule(current.name, binding)
                own = -F.softplus(raw) - self.cap if current.bounded else raw
                total = own if total is None else total + own
            current = self.rules.get(current.parent) if current.parent else None
        return total

    # -------------------------------------------------------------- running

    def parse(self, tokens: Sequence[str]) -> Chart:
        """The chart of a sentence (its words as strings)."""
        d = self.deduction
        agenda: OrderedDict[Any, Weight] = OrderedDict()
        for position, token in enumerate(tokens):
            for axiom in self.axioms.get(token, ()):
                item: tuple[Any, ...] = (SPAN, position, position + 1, axiom.category)
                if d.carries_forms:
                    item = (*item, axiom.form)
                self._push(agenda, item, self._entry_weight(axiom))
        return self._run(agenda, len(tokens))

    def derive(self, axioms: Iterable[tuple[str | Any, float | Weight]]) -> Chart:
        """The chart of a deduction given its axioms and their weights (quivers' input to
        a deduction without a lexicon): each item written as in a rule
        (`"Every(dog, animal)"`, `deduction_items.item`) or already read, with its weight in
        the semiring's values (a log weight under LogProb and Viterbi, a count under
        Counting, 0 or 1 under Boolean), a number or a tensor to differentiate through.
        As in quivers, a span over positions is a goal when it covers 0 to the number
        of axioms given."""
        given = list(axioms)
        agenda: OrderedDict[Any, Weight] = OrderedDict()
        for written, weight in given:
            found = _read(written)
            w = torch.as_tensor(weight, dtype=torch.float64)
            if w.ndim != 0:
                raise QvrRuntimeError(
                    f"deduction {self.deduction.name}: the weight of {show(found)} is one "
                    f"number, not a tensor of shape {tuple(w.shape)}"
                )
            self._push(agenda, found, w)
        return self._run(agenda, len(given))

    def _run(self, agenda: OrderedDict[Any, Weight], n: int) -> Chart:
        """Pop the agenda to a fixed point; the goal items are those over (0, n)."""
        d = self.deduction
        chart: dict[Any, Weight] = {}
        index: dict[Any, list[Any]] = {}
        iterations = 0
        while agenda:
            if iterations >= d.max_iterations:
                raise QvrRuntimeError(
                    f"deduction {d.name} derived items past max_iterations={d.max_iterations} "
                    "(a cycle whose weight does not settle): give it a larger "
                    "`max_iterations`, or a `tolerance`"
                )
            iterations += 1
            item, delta = agenda.popitem(last=False)
            old = chart.get(item)
            new = delta if old is None else self.ops.plus(old, delta)
            if old is not None and not self._changed(old, new):
                continue
            chart[item] = new
            if old is None:
                for key in _keys(item):
                    index.setdefault(key, []).append(item)
            for rule in d.rules:
                for p, pattern in enumerate(rule.premise_terms):
                    start = match(pattern, item, {})
                    if start is None:
                        continue
                    for bindings, weight in self._others(
                        rule, p, start, delta, item, old, chart, index
                    ):
                        self._conclude(agenda, rule, bindings, weight)
        goals = [i for i in chart if self._goal(i, n)]
        return Chart(chart, goals, d.semiring.name, iterations)

    def _changed(self, old: Weight, new: Weight) -> bool:
        tolerance = self.deduction.tolerance
        with torch.no_grad():
            if tolerance > 0:
                diff = (new - old).abs()
                return bool(diff > tolerance) and not bool(torch.isnan(diff))
            return not bool(torch.equal(new, old))

    def _push(self, agenda: OrderedDict[Any, Weight], item: Any, weight: Weight) -> None:
        waiting = agenda.get(item)
        agenda[item] = weight if waiting is None else self.ops.plus(waiting, weight)

    def _others(
        self,
        rule: Rule,
        popped: int,
        bindings: Bindings,
        delta: Weight,
        item: Any,
        old: Weight | None,
        chart: Mapping[Any, Weight],
        index: Mapping[Any, list[Any]],
    ) -> Iterator[tuple[Bindings, Weight]]:
        """Each way to match the rule's other premises against the chart, the popped item
        at premise `popped` weighing its change `delta`. Where the popped item also fills
        another premise, that premise weighs its weight before the change when it comes
        first and after it when it comes later, so each derivation counts once."""
        premises = rule.premise_terms

        def extend(q: int, b: Bindings, weight: Weight) -> Iterator[tuple[Bindings, Weight]]:
            if q == len(premises):
                yield b, weight
                return
            if q == popped:
                yield from extend(q + 1, b, self.ops.times(weight, delta))
                return
            for candidate in _candidates(premises[q], b, index, chart):
                found = match(premises[q], candidate, b)
                if found is None:
                    continue
                w = chart[candidate]
                if candidate == item and q < popped:
                    if old is None:
                        continue  # the item was not there before: only once, later
                    w = old
                yield from extend(q + 1, found, self.ops.times(weight, w))

        yield from extend(0, bindings, self._one())

    def _conclude(
        self, agenda: OrderedDict[Any, Weight], rule: Rule, bindings: Bindings, weight: Weight
    ) -> None:
        try:
            conclusion = instantiate(rule.conclusion_term, bindings)
        except KeyError:
            return  # a conclusion variable no premise binds: quivers' rule never fires
        depth = self.deduction.depth
        if depth is not None and category_depth(conclusion) > depth:
            return
        own = self._own(rule, bindings)
        self._push(agenda, conclusion, weight if own is None else self.ops.times(weight, own))

    def _goal(self, item: Any, n: int) -> bool:
        start = self.deduction.start
        if not isinstance(item, tuple) or not item:
            return False
        if item[0] == SPAN and len(item) >= 4 and isinstance(item[1], int):
            if (item[1], item[2]) != (0, n):
                return False
            return start is None or item[3] == (ATOM, start)
        if start is None:
            return True
        return item == (ATOM, start) or item[0] == start


def _read(written: str | Any) -> Any:
    """An item written as in a rule (`"path(a, d)"`), read; one already read, as it is."""
    return read_item(written) if isinstance(written, str) else written


def _keys(item: Any) -> Iterator[Any]:
    """The index keys an item is found under: its head, and a span's start."""
    if isinstance(item, tuple) and item and isinstance(item[0], str):
        yield (item[0], len(item))
        if item[0] == SPAN and len(item) >= 3:
            yield (SPAN, len(item), "from", item[1])


def _candidates(
    pattern: Term, bindings: Bindings, index: Mapping[Any, list[Any]], chart: Mapping[Any, Weight]
) -> Iterable[Any]:
    """The chart items a premise may match: by its head, and a span's start when known;
    every item for a premise that is one variable."""
    if pattern[0] == VARIABLE:
        return chart.keys()
    if pattern[0] == SPAN and len(pattern) >= 3:
        first = pattern[1]
        if isinstance(first, tuple) and first[0] == VARIABLE and first[1] in bindings:
            first = bindings[first[1]]
        if isinstance(first, int):
            return index.get((SPAN, len(pattern), "from", first), ())
    return index.get((pattern[0], len(pattern)), ())


# ------------------------------------------------------------------ in programs


@functools.lru_cache(maxsize=32)
def _engine(deduction: Deduction) -> DeductionEngine:
    return DeductionEngine(deduction)


@functools.lru_cache(maxsize=4096)
def _goal(deduction: Deduction, ids: tuple[int, ...]) -> float:
    words = deduction.words
    if any(not 0 <= i < len(words) for i in ids):
        bad = next(i for i in ids if not 0 <= i < len(words))
        raise QvrRuntimeError(
            f"parse({deduction.name}, ...): word id {bad} is not one of the {len(words)} "
            f"words of {deduction.name} (0 = {words[0]!r} ... {len(words) - 1} = "
            f"{words[-1]!r}, as its lexicon lists them)"
            if words
            else f"parse({deduction.name}, ...): {deduction.name} has no words"
        )
    with torch.no_grad():
        return float(_engine(deduction).parse([words[i] for i in ids]).goal_weight())


def goal_weight(deduction: Deduction, sentence: torch.Tensor) -> torch.Tensor:
    """`parse(D, sentence)` in a program: the goal weight over the sentence's words (word
    ids, `Deduction.words`), the learnable weights at their start (0). A number computed from
    the data alone, once per sentence."""
    values = sentence.detach().reshape(-1).tolist()
    if any(float(v) != int(v) for v in values):
        raise QvrRuntimeError(
            f"parse({deduction.name}, ...): a sentence is word ids, whole numbers; "
            f"the data gives {next(v for v in values if float(v) != int(v))}"
        )
    ids = tuple(int(v) for v in values)
    return torch.tensor(
        _goal(deduction, ids), dtype=torch.get_default_dtype(), device=sentence.device
    )
