"""Source quoted in a diagnostic stays on the message's one line (issue 24).

QVR209 used to quote a `return` wrapped over two lines as written, breaking the
one-line message every client shows (the terminal's `file:line:col: error`
line, the Problems panel's row); and then quoted the comment at the end of a
wrapped line with the code (issue 46).
"""

from __future__ import annotations

from pathlib import Path

from qvr_core.check import check
from qvr_core.syntax.layout import without_comments

SWAPPED = """object Left : Real 16
object Right : Real 32

program swap (a, b) : Left * Right -> Left * Right
    return (b,
            a)

export swap
"""


def test_a_wrapped_return_is_quoted_on_one_line() -> None:
    (error,) = check(SWAPPED).errors
    assert error.code == "QVR209"
    assert "return (b, a) gives Right * Left" in error.message
    assert "\n" not in error.message


COMMENTED = """object Left : Real 16
object Right : Real 32

program swap (a, b) : Left * Right -> Left * Right
    return (b,   # the second, "b #1"
            a)   # and the first

export swap
"""


def test_a_wrapped_return_is_quoted_without_its_comments() -> None:
    (error,) = check(COMMENTED).errors
    assert error.code == "QVR209"
    assert "return (b, a) gives Right * Left" in error.message
    assert "#" not in error.message and "second" not in error.message


def test_a_hash_in_a_string_or_opening_a_pragma_is_quoted_as_code() -> None:
    code = 'f(x="#1",  # a comment\n  #[p] y, z)  # another\n  w)'
    assert without_comments(code) == 'f(x="#1",  \n  #[p] y, z)  \n  w)'
    assert without_comments("no comment") == "no comment"


def test_every_error_example_wrapped_after_each_comma_keeps_one_line_messages() -> None:
    """Each example of examples/errors with a line break (and indentation) after every
    comma inside brackets: the messages that quote source never span lines."""
    for path in sorted(Path("examples/errors").glob("*.qvr")):
        text = path.read_text(encoding="utf-8")
        wrapped = _wrap_inside_brackets(text)
        for diagnostic in check(wrapped).diagnostics:
            assert "\n" not in diagnostic.message, (path.name, diagnostic.message)


def _wrap_inside_brackets(text: str) -> str:
    out: list[str] = []
    depth = 0
    for ch in text:
        depth += ch in "(["
        depth -= ch in ")]"
        out.append(",\n        " if ch == "," and depth > 0 else ch)
    return "".join(out)
