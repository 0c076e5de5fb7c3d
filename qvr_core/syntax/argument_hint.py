"""The hint and the fix for arithmetic written as a family's argument (`Normal(a + 1.0, s)`).

No grammar of quivers parses an operator inside a step's family call: its arguments are
names, numbers, gathers and calls (`Bernoulli(sigmoid(eta))`). A Stan or PyMC user
writes `normal(mu + 1, s)` without thinking, and the bare syntax error ("expected ',' or
')', found '+'") does not say what to do. So when a `sample`, `observe` or `marginalize`
line stops at an operator inside the parentheses after `<-`, the message says to bind
the argument with a `let`, and a fix does it: the argument, from the comma or
parenthesis before it to the one after it, becomes a `let` on a line of its own just
above the step, and the call reads the let's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from qvr_core.syntax.layout import Token, cover
from qvr_core.text.diagnostics import Fix, TextEdit
from qvr_core.text.span import Span

#: The first token of a line whose source may be a family call.
_SITE_STEPS = frozenset({"SAMPLE", "OBSERVE", "MARGINALIZE"})
#: Operators of arithmetic, which a family call's arguments cannot hold.
_OPERATORS = frozenset({"PLUS", "MINUS", "STAR", "SLASH"})
_OPEN, _CLOSE = frozenset({"LPAR", "LSQB"}), frozenset({"RPAR", "RSQB"})


def argument_hint(
    tokens: Sequence[Token], index: int, text: str, offset: int = 0
) -> tuple[str, Fix] | None:
    """The message's ending and the fix, when the line stopped at `tokens[index]`, an
    operator inside the argument list of the call after `<-` on a site step; else None.

    `text` is the source the tokens index, from `offset` (the parser's chunk)."""
    if not tokens or tokens[0].type not in _SITE_STEPS or index >= len(tokens):
        return None
    if tokens[index].type not in _OPERATORS:
        return None
    arrow = next((i for i, t in enumerate(tokens[:index]) if t.type == "LARROW"), None)
    if arrow is None or arrow + 2 >= index or tokens[arrow + 2].type != "LPAR":
        return None
    commas = _commas(tokens, arrow + 2, index)
    end = _argument_end(tokens, index)
    if commas is None or end is None:  # the call closed before the operator
        return None
    begin = (commas[-1] if commas else arrow + 2) + 1
    if begin >= index:  # the operator starts the argument: nothing to bind
        return None
    first, last = tokens[begin], tokens[end - 1]
    argument = " ".join(text[first.start - offset : last.end - offset].split())
    target = tokens[1].text if len(tokens) > 1 and tokens[1].type == "NAME" else "value"
    position = len(commas) + 1
    name = f"{target}_arg{position}"
    step = tokens[0]
    line_start = step.start - step.start_col
    indent = text[line_start - offset : step.start - offset]
    above = Span(line_start, line_start, step.start_line, 0, step.start_line, 0)
    written = cover(first, last)
    fix = Fix(
        f"Bind '{argument}' to a let",
        (
            TextEdit(above, f"{indent}let {name} = {argument}\n"),
            TextEdit(written, name),
        ),
        preferred=True,
    )
    ending = (
        f": a family's arguments are names, numbers and calls (`sigmoid(eta)`); compute "
        f"'{argument}' in a `let` first"
    )
    return ending, fix


def _commas(tokens: Sequence[Token], opener: int, index: int) -> list[int] | None:
    """The call's own commas (at its '(''s level) between `opener` and `index`, in
    order; None when the call closes before `index`."""
    commas, depth = [], 0
    for i in range(opener, index):
        t = tokens[i]
        if t.type in _OPEN:
            depth += 1
        elif t.type in _CLOSE:
            depth -= 1
            if depth == 0:
                return None
        elif t.type == "COMMA" and depth == 1:
            commas.append(i)
    return commas


def _argument_end(tokens: Sequence[Token], index: int) -> int | None:
    """One past the argument's last token: the ',' or ')' that ends it at its level."""
    depth = 0
    for i in range(index, len(tokens)):
        t = tokens[i]
        if t.type in _OPEN:
            depth += 1
        elif t.type in _CLOSE:
            if depth == 0:
                return i
            depth -= 1
        elif t.type == "COMMA" and depth == 0:
            return i
    return None
