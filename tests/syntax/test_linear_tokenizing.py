"""Tokenizing and the layout pass are linear in a line's length, whatever the line (issue 46).

One pattern for the whole line used to try a string at every quote and scan
to the line's end from each: `qvr check` of 40 KB of `"\\"\\"...` took 16 s, and
the language server froze while `re` held the GIL. The work is counted here,
not timed: every compiled pattern of `qvr_core.syntax` runs through
`tests.regex_steps`, which counts the steps a backtracking engine such as
`re`'s takes, and parsing 32 times as long a hostile line may take at most
`RATIO` times the steps (32 if linear; a scan again from each character
makes it about a thousand). The counting machine runs in Python, so the
lines are 1 KB and 32 KB: `bench/hostile_lines.py` times 100 KB and 1 MB.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qvr.lexer
import qvr_core.syntax
from qvr.lexer import QvrLexer
from qvr_core.syntax import layout, parse
from tests.regex_steps import Meter, TooManySteps, counting, patterns_of

SMALL = 1_000
LARGE = 32_000
RATIO = 48  # 1.5 times the ratio of the lengths


def line(unit: str, prefix: str = "", suffix: str = "") -> Callable[[int], str]:
    """A line of about `n` characters: `prefix`, `unit` again and again, `suffix`
    (whole units, so that lines of every length end alike)."""

    def make(n: int) -> str:
        return prefix + unit * ((n - len(prefix) - len(suffix)) // len(unit)) + suffix

    return make


def long(run: str, then: str) -> Callable[[int], str]:
    """One run of `run` as long as the line, then `then`."""
    return lambda n: run * (n - len(then)) + then


#: Lines that made a pattern scan again what it had scanned, or might.
SHAPES: dict[str, Callable[[int], str]] = {
    "quotes": line('"'),
    "quote-backslash": line('"\\'),
    "backslash-quote": line('\\"'),
    "let-quote-backslash": line('"\\', "let x = "),
    "unterminated-string": line("a b ", 'let x = "'),
    "strings-and-escapes": line('"a\\"" \\'),
    "hashes": line("#"),
    "code-then-hashes": line("#", "let x = f "),
    "pragmas": line("#["),
    "words-and-blanks": line("w" * 50 + " " * 50),
    "long-word-then-blanks": lambda n: "x" * (n // 2) + " " * (n // 2 - 3) + " in",
    "long-word-then-operator": long("x", "+ in"),
    "long-word-then-bracket": long("x", "( in"),
    "long-blank-run": long(" ", "x in"),
    "soft-keywords": line("in "),
    "keyword-lines": line("let\n"),
    "digits": line("1"),
    "digits-and-dots": line("1.e"),
    "tabs-and-blanks": line(" \t"),
    "stray-characters": line("$?"),
    "mixed": line('"\\ in # "\\" #[ 1.5e x\t'),
}


def parse_counting(text: str, meter: Meter, monkeypatch: pytest.MonkeyPatch) -> Meter:
    """Parse `text` with every pattern of `qvr_core.syntax` counting into `meter`."""
    with monkeypatch.context() as patch:
        for info in pkgutil.iter_modules(qvr_core.syntax.__path__):
            module = importlib.import_module(f"qvr_core.syntax.{info.name}")
            for name, pattern in patterns_of(module).items():
                patch.setattr(module, name, counting(pattern, meter))
        parse(text)
    return meter


@pytest.mark.parametrize("shape", SHAPES)
def test_parsing_a_hostile_line_takes_steps_linear_in_its_length(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = parse_counting(SHAPES[shape](SMALL), Meter(), monkeypatch)
    try:
        large = parse_counting(SHAPES[shape](LARGE), Meter(budget=RATIO * small.steps), monkeypatch)
    except TooManySteps:
        pytest.fail(f"{LARGE:,} characters took over {RATIO} times the steps of {SMALL:,}")
    assert large.steps <= RATIO * small.steps


def test_the_patterns_of_the_tokenizer_are_the_ones_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    meter = parse_counting('let x = f("a", 1.5) # c\nobject A : FinSet 2\n', Meter(), monkeypatch)
    assert meter.calls >= 2 and meter.steps > 100


def test_the_counter_sees_a_pattern_that_scans_again() -> None:
    """The one-pattern tokenizer this replaced, counted: quadratic on `"\\"\\"...`."""
    old = re.compile(r"([ ]*)(?:(\w+)|(\"(?:[^\"\\]|\\.)*\")|([^ ]))")
    steps = {}
    for n in (200, 1_000):
        meter = Meter()
        counting(old, meter).findall('"\\' * (n // 2))
        steps[n] = meter.steps
    assert steps[1_000] > 15 * steps[200]  # 5 times the length, over 15 times the work


def counted_patterns() -> list[re.Pattern[str]]:
    """Every pattern these tests count: `qvr_core.syntax`'s, the lexer's rules and its own."""
    found = []
    for info in pkgutil.iter_modules(qvr_core.syntax.__path__):
        found += patterns_of(importlib.import_module(f"qvr_core.syntax.{info.name}")).values()
    QvrLexer()  # Pygments compiles the rules on the first instance
    found += [match.__self__ for rules in QvrLexer._tokens.values() for match, _, _ in rules]
    return [*found, *patterns_of(qvr.lexer).values()]


COUNTED = [counting(pattern, Meter()) for pattern in counted_patterns()]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet='"\\ #[!a1.eE+\t(in\r\n=<|->x_\u00e9\ufeff', max_size=24))
def test_the_counter_finds_the_matches_re_finds(text: str) -> None:
    """Each counted call also asks `re` and fails on any disagreement: here on every
    pattern, every call, every start."""
    for pattern in COUNTED:
        pattern.findall(text)
        pattern.search(text)
        pattern.fullmatch(text)
        for pos in range(len(text) + 1):
            pattern.match(text, pos)
            pattern.search(text, pos, len(text) - 1)


def kinds(code: str) -> list[tuple[str, str]]:
    found = layout.split(code)
    tokens = [t for chunk in found.chunks for t in chunk.head.tokens + chunk.head.bad]
    return [(t.type, t.text) for t in sorted(tokens, key=lambda t: t.start)]


def test_after_an_unterminated_string_its_quote_is_stray_and_no_string_starts() -> None:
    assert kinds('let x = "a\\"b" "c \\" d') == [
        ("LET", "let"),
        ("NAME", "x"),
        ("EQUAL", "="),
        ("STRING", '"a\\"b"'),
        ("BAD", '"'),
        ("NAME", "c"),
        ("BACKSLASH", "\\"),
        ("BAD", '"'),
        ("NAME", "d"),
    ]
    assert kinds('"\\"\\"') == [
        ("BAD", '"'),
        ("BACKSLASH", "\\"),
        ("BAD", '"'),
        ("BACKSLASH", "\\"),
        ("BAD", '"'),
    ]
    assert kinds('x "\\') == [("NAME", "x"), ("BAD", '"'), ("BACKSLASH", "\\")]


def test_a_string_still_closes_where_it_did() -> None:
    assert kinds('f "a" "b\\\\" "\\"" g') == [
        ("NAME", "f"),
        ("STRING", '"a"'),
        ("STRING", '"b\\\\"'),
        ("STRING", '"\\""'),
        ("NAME", "g"),
    ]
