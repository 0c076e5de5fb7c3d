"""Counting the work of regular expressions, for tests that a scanner is linear.

Python's `re` says what matched, never how much it looked at, and a pattern can
look at far more than it matches: `"(?:[^"\\]|\\.)*"` tried at each quote of
`"\"\"\"...` scans to the end of the line every time and matches nothing. So
this module matches a pattern the way `re`'s engine does (backtracking, the
alternatives in order, greedy, lazy and possessive loops, lookaheads, the
same parse of the pattern by `re`'s own parser, and each character class
tested by `re` itself) and counts its steps: one per instruction, per
character a loop scans, per backtrack, per alternative of a branch (`re` looks
at each one's first character), per start position of a search. The count is
a deterministic measure of the work, where seconds are not.

`counting(pattern, meter)` is a drop-in for a compiled pattern: each call
answers with `re`'s own result, adds the steps it took to `meter`, and fails
the test if this machine and `re` ever disagree on where a match is (then the
count would be of some other work). A meter with a budget raises `TooManySteps`
past it, so a quadratic scan fails in a moment instead of running for minutes.

Not supported (raises NotImplementedError, so a test cannot silently count
nothing): back references, lookbehind, conditional groups, and an unbounded
loop whose body can match the empty string.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from re import _compiler, _constants, _parser  # type: ignore[attr-defined]  # private, no stubs
from typing import Any

_CHAR_OPS = (_constants.LITERAL, _constants.NOT_LITERAL, _constants.ANY, _constants.IN)
_MAXREPEAT = _constants.MAXREPEAT

# instructions: (opcode, operands...)
_CHAR, _SPLIT, _JMP, _AT, _BRANCH, _STAR, _LAZY, _LOOK, _ATOMIC, _MATCH = range(10)


class TooManySteps(AssertionError):
    """The scan took more steps than the meter's budget allows."""


@dataclass
class Meter:
    """Steps counted so far, over every pattern that shares the meter."""

    steps: int = 0
    budget: float = float("inf")
    calls: int = 0

    def add(self, steps: int) -> None:
        self.steps += steps
        if self.steps > self.budget:
            raise TooManySteps(f"more than {self.budget:,.0f} steps of regular expressions")


CharTest = Callable[[str], bool]


def _single(item: tuple[Any, Any], flags: int) -> re.Pattern[str]:
    """`re`'s compilation of one item of a parsed pattern, under `flags`."""
    state = _parser.State()
    state.flags = flags
    compiled = _compiler.compile(_parser.SubPattern(state, [item]), flags)
    return compiled  # type: ignore[no-any-return]  # untyped private module


def _char_test(item: tuple[Any, Any], flags: int) -> CharTest:
    match = _single(item, flags).match
    memo: dict[str, bool] = {}

    def test(ch: str) -> bool:
        found = memo.get(ch)
        if found is None:
            found = memo[ch] = match(ch) is not None
        return found

    return test


class _Program:
    """A parsed pattern compiled to instructions of the backtracking machine."""

    def __init__(self, items: list[tuple[Any, Any]], flags: int) -> None:
        self.code: list[tuple[Any, ...]] = []
        self._emit(items, flags)
        self.code.append((_MATCH,))

    def _emit(self, items: Any, flags: int) -> None:
        code = self.code
        for op, av in items:
            if op in _CHAR_OPS:
                code.append((_CHAR, {}, _single((op, av), flags).match))
            elif op is _constants.BRANCH:
                at = len(code)
                code.append((_BRANCH,))
                starts: list[tuple[CharTest | None, int]] = []
                jumps: list[int] = []
                for alternative in av[1]:
                    starts.append((_first(alternative, flags), len(code)))
                    self._emit(alternative, flags)
                    jumps.append(len(code))
                    code.append((_JMP, -1))
                for j in jumps:
                    code[j] = (_JMP, len(code))
                code[at] = (_BRANCH, starts, {})
            elif op is _constants.SUBPATTERN:
                _group, add, remove, inner = av
                self._emit(inner, (flags | add) & ~remove)
            elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT):
                self._repeat(av, flags, greedy=op is _constants.MAX_REPEAT)
            elif op is _constants.POSSESSIVE_REPEAT:
                code.append((_ATOMIC, _Program([(_constants.MAX_REPEAT, av)], flags)))
            elif op is _constants.ATOMIC_GROUP:
                code.append((_ATOMIC, _Program(av, flags)))
            elif op is _constants.AT:
                code.append((_AT, _single((op, av), flags).match))
            elif op in (_constants.ASSERT, _constants.ASSERT_NOT):
                direction, inner = av
                if direction != 1:
                    raise NotImplementedError("lookbehind")
                code.append((_LOOK, _Program(inner, flags), op is _constants.ASSERT))
            else:
                raise NotImplementedError(f"{op} in a counted pattern")

    def _repeat(self, av: tuple[int, int, Any], flags: int, greedy: bool) -> None:
        low, high, body = av
        code = self.code
        if len(body) == 1 and body[0][0] in _CHAR_OPS:  # `re`'s REPEAT_ONE
            code.append((_STAR if greedy else _LAZY, _char_test(body[0], flags), low, high))
            return
        for _ in range(low):
            self._emit(body, flags)
        if high == _MAXREPEAT:
            if _nullable(body):
                raise NotImplementedError("an unbounded loop of what can match nothing")
            loop = len(code)
            code.append((_SPLIT,))
            self._emit(body, flags)
            code.append((_JMP, loop))
            out = len(code)
            code[loop] = (_SPLIT, loop + 1, out) if greedy else (_SPLIT, out, loop + 1)
            return
        splits = []
        for _ in range(high - low):
            splits.append(len(code))
            code.append((_SPLIT,))
            self._emit(body, flags)
        out = len(code)
        for s in splits:
            code[s] = (_SPLIT, s + 1, out) if greedy else (_SPLIT, out, s + 1)


def _first(items: Any, flags: int) -> CharTest | None:
    """A test that the first character must pass for `items` to match, if one is known
    (`re` too skips an alternative at once when its first character does not fit)."""
    for op, av in items:
        if op in _CHAR_OPS:
            return _char_test((op, av), flags)
        if op is _constants.SUBPATTERN:
            return _first(av[3], (flags | av[1]) & ~av[2])
        if op in (_constants.MAX_REPEAT, _constants.POSSESSIVE_REPEAT) and av[0] > 0:
            return _first(av[2], flags)
        if op is _constants.ASSERT_NOT and not av[1]:  # `(?!)`: never matches
            return _never
        if op in (_constants.AT, _constants.ASSERT, _constants.ASSERT_NOT):
            continue  # takes no character: the first is the next item's
        if op is _constants.BRANCH:
            tests = [_first(alternative, flags) for alternative in av[1]]
            if any(test is None for test in tests):
                return None
            return _either(tests)  # type: ignore[arg-type]  # no None, checked above
        return None
    return None


def _either(tests: list[CharTest]) -> CharTest:
    memo: dict[str, bool] = {}

    def either(ch: str) -> bool:
        found = memo.get(ch)
        if found is None:
            found = memo[ch] = any(test(ch) for test in tests)
        return found

    return either


def _never(ch: str) -> bool:
    return False


def _nullable(items: Any) -> bool:
    low, _high = _parser.SubPattern(_parser.State(), list(items)).getwidth()
    return bool(low == 0)


def _run(
    program: _Program,
    text: str,
    start: int,
    endpos: int,
    meter: Meter,
    must_advance: bool = False,
    whole: bool = False,
) -> int:
    """Where a match of `program` anchored at `start` ends, or -1; its steps go to `meter`.

    The opcodes are literals below (0 _CHAR, 1 _SPLIT, 2 _JMP, 3 _AT, 4 _BRANCH,
    5 _STAR, 6 _LAZY, 7 _LOOK, 8 _ATOMIC, 9 _MATCH): this loop is the tests' hot path.
    """
    code = program.code
    stack: list[tuple[Any, ...]] = []
    push = stack.append
    pc, pos, steps = 0, start, 0
    limit = meter.budget - meter.steps
    while True:
        steps += 1
        if steps > limit:
            meter.add(steps)  # raises
        ins = code[pc]
        op = ins[0]
        if op == 0:  # _CHAR
            if pos < endpos:
                ch = text[pos]
                memo = ins[1]
                found = memo.get(ch)
                if found is None:
                    found = memo[ch] = ins[2](ch) is not None
                if found:
                    pos += 1
                    pc += 1
                    continue
        elif op == 1:  # _SPLIT
            push((ins[2], pos))
            pc = ins[1]
            continue
        elif op == 2:  # _JMP
            pc = ins[1]
            continue
        elif op == 4:  # _BRANCH
            _, starts, memo = ins
            ch = text[pos] if pos < endpos else ""
            viable = memo.get(ch)
            if viable is None:
                viable = memo[ch] = [
                    at for test, at in starts if test is None or (ch != "" and test(ch))
                ]
            steps += len(starts)
            if viable:
                for at in reversed(viable[1:]):
                    push((at, pos))
                pc = viable[0]
                continue
        elif op == 5:  # _STAR, greedy
            _, test, low, high = ins
            first = pos
            last = endpos if high == _MAXREPEAT else min(endpos, pos + high)
            while pos < last and test(text[pos]):
                pos += 1
            steps += pos - first
            if pos - first >= low:
                if pos - first > low:
                    push((pc + 1, pos - 1, first + low))
                pc += 1
                continue
        elif op == 6:  # _LAZY
            _, test, low, high = ins
            first = pos
            while pos - first < low and pos < endpos and test(text[pos]):
                pos += 1
            steps += pos - first
            if pos - first >= low:
                last = endpos if high == _MAXREPEAT else min(endpos, first + high)
                push((pc + 1, pos, last, test))
                pc += 1
                continue
        elif op == 3:  # _AT
            if ins[1](text, pos, endpos) is not None:
                pc += 1
                continue
        elif op == 8:  # _ATOMIC
            meter.add(steps)
            steps = 0
            end = _run(ins[1], text, pos, endpos, meter)
            limit = meter.budget - meter.steps
            if end >= 0:
                pos = end
                pc += 1
                continue
        elif op == 7:  # _LOOK
            meter.add(steps)
            steps = 0
            matched = _run(ins[1], text, pos, endpos, meter) >= 0
            limit = meter.budget - meter.steps
            if matched == ins[2]:
                pc += 1
                continue
        elif not ((must_advance and pos == start) or (whole and pos != endpos)):  # _MATCH
            meter.add(steps)
            return pos
        while True:  # backtrack
            if not stack:
                meter.add(steps)
                return -1
            steps += 1
            entry = stack.pop()
            if len(entry) == 2:
                pc, pos = entry
                break
            if len(entry) == 3:  # a greedy loop gives back one more character
                pc, pos, low = entry
                if pos > low:
                    push((pc, pos - 1, low))
                break
            pc, pos, last, test = entry  # a lazy loop takes one more
            if pos < last and test(text[pos]):
                push((pc, pos + 1, last, test))
                pos += 1
                break


class Counted:
    """A compiled pattern whose every call adds its steps to a `Meter` (see the module)."""

    def __init__(self, pattern: re.Pattern[str], meter: Meter) -> None:
        self.compiled = pattern
        self.meter = meter
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        self._program = _Program(parsed.data, parsed.state.flags)
        #: what the first character must be, if known: a match where it is not is one step
        self._first = _first(parsed.data, parsed.state.flags)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.compiled, name)

    # ------------------------------------------------------------- counting

    def _anchored(self, text: str, pos: int, endpos: int, whole: bool = False) -> int:
        self.meter.calls += 1
        if pos > endpos:
            self.meter.add(1)
            return -1
        first = self._first
        if first is not None and (pos >= endpos or not first(text[pos])):
            self.meter.add(1)
            return -1
        return _run(self._program, text, pos, endpos, self.meter, whole=whole)

    def _search(
        self, text: str, pos: int, endpos: int, must_advance: bool = False
    ) -> tuple[int, int] | None:
        first = self._first
        for start in range(pos, endpos + 1):
            self.meter.steps += 1
            if first is not None and (start == endpos or not first(text[start])):
                continue
            end = _run(
                self._program, text, start, endpos, self.meter, must_advance and start == pos
            )
            if end >= 0:
                return start, end
        return None

    def _spans(self, text: str, pos: int, endpos: int) -> Iterator[tuple[int, int]]:
        """The spans `finditer` gives, found by this machine (Python 3.7+'s rules for
        empty matches: one may follow a non-empty match, never another at its place)."""
        self.meter.calls += 1
        must_advance = False
        while pos <= endpos:
            found = self._search(text, pos, endpos, must_advance)
            if found is None:
                return
            yield found
            must_advance = found[0] == found[1]
            pos = found[1]

    @staticmethod
    def _bounds(text: str, pos: int, endpos: int) -> tuple[int, int]:
        """`pos` and `endpos` as `re` reads them: within the text; a `pos` past `endpos`
        stays past it (nothing matches there, not even the empty string)."""
        end = len(text) if endpos >= len(text) else max(endpos, 0)
        return min(max(pos, 0), len(text)), end

    @staticmethod
    def _agree(got: object, expected: object) -> None:
        assert got == expected, f"the step counter disagrees with re: {got} != {expected}"

    # ------------------------------------------------------ re.Pattern's API

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self.compiled.match(string, pos, endpos)
        start, end = self._bounds(string, pos, endpos)
        first = self._first
        if start > end or (first is not None and (start == end or not first(string[start]))):
            # the hot path of a lexer trying its rules in turn: one step, no machine
            self.meter.calls += 1
            self.meter.steps += 1
            self._agree(found, None)
            return None
        counted = self._anchored(string, start, end)
        self._agree(counted, found.end() if found else -1)
        return found

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        found = self.compiled.fullmatch(string, pos, endpos)
        start, end = self._bounds(string, pos, endpos)
        counted = self._anchored(string, start, end, whole=True)
        self._agree(counted, found.end() if found else -1)
        return found

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self.compiled.search(string, pos, endpos)
        self.meter.calls += 1
        counted = self._search(string, *self._bounds(string, pos, endpos))
        self._agree(counted, found.span() if found else None)
        return found

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        found = list(self.compiled.finditer(string, pos, endpos))
        counted = list(self._spans(string, *self._bounds(string, pos, endpos)))
        self._agree(counted, [m.span() for m in found])
        return iter(found)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        self.finditer(string, pos, endpos)
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        self.finditer(string)
        return self.compiled.sub(repl, string, count)

    def subn(self, repl: Any, string: str, count: int = 0) -> tuple[str, int]:
        self.finditer(string)
        return self.compiled.subn(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[Any]:
        self.finditer(string)
        return self.compiled.split(string, maxsplit)


def counting(pattern: re.Pattern[str], meter: Meter) -> Counted:
    """`pattern`, counting its steps into `meter`."""
    return Counted(pattern, meter)


def patterns_of(module: object) -> dict[str, re.Pattern[str]]:
    """The compiled patterns a module keeps at its top level, by name."""
    return {k: v for k, v in vars(module).items() if isinstance(v, re.Pattern)}
