"""The Pygments lexer is linear in a line's length, whatever the line (issue 46).

Its string rule tried a string at every quote and scanned to the line's end
from each, and each soft keyword copied the rest of its line and searched the
line before it for a word: 100 KB of `"\\"\\"...` took 41 s, 1 MB over a minute.
The work is counted, not timed, twice: the steps of every pattern of the lexer
(its rules and its module's own), counted by `tests.regex_steps` as a
backtracking engine such as `re`'s takes them; and the characters that the
lexer's own Python code reads of the text (slices, searches), counted by a
`str` that keeps count. Lexing 32 times as long a hostile line may take at
most `RATIO` times either (32 if linear), as for the tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, SupportsIndex

import pytest

import qvr.lexer
from qvr.lexer import QvrLexer
from tests.regex_steps import Meter, TooManySteps, counting, patterns_of
from tests.syntax.test_linear_tokenizing import LARGE, RATIO, SHAPES, SMALL, line

#: The lexer's own hostile lines besides the tokenizer's: soft keywords after long
#: runs of blanks, after words, before `|->`, at the starts of lines.
LEXER_SHAPES = {
    **SHAPES,
    "soft-keywords-after-words": line("x in "),
    "soft-keywords-ending-lines": line("x in\n"),
    "soft-keywords-before-comments": line("x in # c\n"),
    "soft-keywords-after-blanks": line(" " * 40 + "in"),
    "soft-keywords-before-arrows": line("in |-> "),
    "soft-keywords-alone-on-lines": line("in\n"),
    "declarations": line("define "),
}


def lex_counting(text: str, meter: Meter, monkeypatch: pytest.MonkeyPatch) -> Meter:
    """Lex `text` with every rule of the lexer and every pattern of its module counted."""

    class Counted(QvrLexer):  # its own rules, so the counting ones stay with this meter
        pass

    Counted()  # Pygments compiles the rules on the first instance
    for rules in Counted._tokens.values():
        for i, (match, action, new_state) in enumerate(rules):
            rules[i] = (counting(match.__self__, meter).match, action, new_state)
    with monkeypatch.context() as patch:
        for name, pattern in patterns_of(qvr.lexer).items():
            patch.setattr(qvr.lexer, name, counting(pattern, meter))
        for _ in _tokens(Counted(), text):
            pass
    return meter


def _tokens(lexer: QvrLexer, text: str) -> Iterator[object]:
    return iter(lexer.get_tokens(text))


class Reading(str):
    """A text that counts the characters Python code reads of it: each slice's length,
    each search's stretch, each prefix compared (`re` reads it without asking)."""

    read = 0

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        got = str.__getitem__(self, key)
        self.read += max(len(got), 1)
        return got

    def _stretch(self, start: SupportsIndex | None, end: SupportsIndex | None) -> range:
        return range(len(self))[slice(start, end)]

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:
        found = str.find(self, sub, start, end)
        within = self._stretch(start, end)
        self.read += (found if found >= 0 else within.stop) - within.start + len(sub)
        return found

    def rfind(self, sub: str, start: Any = None, end: Any = None) -> int:
        found = str.rfind(self, sub, start, end)
        within = self._stretch(start, end)
        self.read += within.stop - (found if found >= 0 else within.start) + len(sub)
        return found

    def startswith(self, prefix: Any, start: Any = None, end: Any = None) -> bool:
        self.read += max(map(len, prefix)) if isinstance(prefix, tuple) else len(prefix)
        return str.startswith(self, prefix, start, end)

    def _whole(self, *args: Any) -> Any:
        raise AssertionError("the lexer read the text in a way Reading does not count")

    endswith = split = rsplit = strip = lstrip = rstrip = count = index = rindex = _whole


def characters_read(text: str) -> int:
    """How many characters of `text` the lexer's own code reads while lexing it."""
    reading = Reading(text + "\n")  # as `get_tokens` hands it over, with a final line end
    for _ in QvrLexer().get_tokens_unprocessed(reading):
        pass
    return reading.read


@pytest.mark.parametrize("shape", LEXER_SHAPES)
def test_the_lexer_reads_a_hostile_line_a_bounded_number_of_times(shape: str) -> None:
    small = characters_read(LEXER_SHAPES[shape](SMALL))
    large = characters_read(LEXER_SHAPES[shape](LARGE))
    assert large <= RATIO * max(small, 1)


@pytest.mark.parametrize("shape", LEXER_SHAPES)
def test_lexing_a_hostile_line_takes_steps_linear_in_its_length(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = lex_counting(LEXER_SHAPES[shape](SMALL), Meter(), monkeypatch)
    assert small.calls > 0
    try:
        large = lex_counting(
            LEXER_SHAPES[shape](LARGE), Meter(budget=RATIO * small.steps), monkeypatch
        )
    except TooManySteps:
        pytest.fail(f"{LARGE:,} characters took over {RATIO} times the steps of {SMALL:,}")
    assert large.steps <= RATIO * small.steps


def test_a_soft_keyword_is_still_read_by_its_neighbours() -> None:
    """The cases of the module's docstring, read now from the word's surroundings only."""

    def kind(text: str, nth: int = 0) -> object:
        found = [k for k, v in QvrLexer().get_tokens(text) if v == "in"]
        return found[nth]

    from pygments.token import Keyword, Name

    assert kind("for x in xs") is Keyword  # a word follows
    assert kind("f(in = 1)") is Name  # `=` follows: a name
    assert kind("f in") is Keyword  # ends a line after a value
    assert kind("return in") is Name  # after a keyword it is a name
    assert kind("(a) in") is Keyword  # after a bracket
    assert kind("x + in") is Name
    assert kind("    in") is Keyword  # alone on its line
    assert kind("in |-> x") is Keyword
    assert kind("in# c") is Keyword  # alone before a comment
    assert kind("x in  # c") is Keyword
    assert kind("FinSet in") is Name
    assert kind(("x" * 50) + " in") is Keyword  # a long word: none of the keywords
