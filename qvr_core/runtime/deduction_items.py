"""Chart items written as text, for the axioms a deduction without a lexicon is given.

quivers 0.25.2 runs such a deduction on a list of `(item, weight)` pairs, the items in
its term representation (`dsl/compiler/_deduction_terms.py`). From Python, qvr takes an
item as a user writes it in a rule: `Every(dog, animal)`, `span(0, 1, NP)`,
`span(0, 2, S / NP)`. `item("...")` reads it into that representation: a name is a
constant (`("atom", name)`: an axiom is ground, it has no variables), a whole number a
position, `f(a, b)` the applied term `(f, a, b)`, `X / Y` and `X \\ Y` slashes (result
first), `X * Y` a product, parentheses group. Bad text is refused with the place it goes
wrong; nesting is bounded, so no text can exhaust the stack.
"""

from __future__ import annotations

import re
from typing import Any

from qvr_core.check.deduction_system import ATOM
from qvr_core.runtime.errors import QvrRuntimeError

#: How deeply an item may nest (parentheses and applications): far beyond any grammar's
#: categories, and far below Python's recursion limit.
MAX_DEPTH = 200

_TOKEN = re.compile(r"\s*(?:(?P<int>\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[(),/\\*]))")


def item(text: str) -> Any:
    """The chart item `text` writes, in the engine's representation."""
    tokens = _tokens(text)
    reader = _Reader(text, tokens)
    found = reader.term(0)
    if reader.at < len(tokens):
        reader.fail("expected the end of the item")
    return found


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    at = 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        m = _TOKEN.match(text, at)
        if m is None or m.end() == at:
            start = len(text) - len(text[at:].lstrip())
            raise QvrRuntimeError(
                f"item {text!r}: unexpected {text[start]!r} at character {start + 1}"
            )
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind), m.start(kind)))
        at = m.end()
    return out


class _Reader:
    def __init__(self, text: str, tokens: list[tuple[str, str, int]]) -> None:
        self.text = text
        self.tokens = tokens
        self.at = 0

    def fail(self, what: str) -> None:
        where = self.tokens[self.at][2] + 1 if self.at < len(self.tokens) else len(self.text) + 1
        raise QvrRuntimeError(f"item {self.text!r}: {what} at character {where}")

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def term(self, depth: int) -> Any:
        """`a / b`, `a \\ b` (left to right) over products."""
        left = self.product(depth)
        while self.peek() in ("/", "\\"):
            op = self.tokens[self.at][1]
            self.at += 1
            left = (op, left, self.product(depth))
        return left

    def product(self, depth: int) -> Any:
        left = self.atom(depth)
        while self.peek() == "*":
            self.at += 1
            left = ("product", (left, self.atom(depth)))
        return left

    def atom(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            self.fail(f"nested more than {MAX_DEPTH} deep")
        if self.at >= len(self.tokens):
            self.fail("expected a name, a number or '('")
        kind, value, _ = self.tokens[self.at]
        if kind == "int":
            self.at += 1
            return int(value)
        if value == "(":
            self.at += 1
            inner = self.term(depth + 1)
            self.expect(")")
            return inner
        if kind != "name":
            self.fail("expected a name, a number or '('")
        self.at += 1
        if self.peek() != "(":
            return (ATOM, value)
        self.at += 1
        args = [self.term(depth + 1)]
        while self.peek() == ",":
            self.at += 1
            args.append(self.term(depth + 1))
        self.expect(")")
        return (value, *args)

    def expect(self, token: str) -> None:
        if self.peek() != token:
            self.fail(f"expected {token!r}")
        self.at += 1
