"""A Stan program tree (`program.py`) written as text: layout only, never a decision.

Everything the program says was decided by the lowering; the printer only spells it,
and cannot fail. Its layout: each block's statements indented two spaces, and each
loop's body two more; a block with nothing in it is left out (but `model`, which every
Stan program of a model has). In `transformed data`, a loop of one statement (the entry
by entry computation of a let, the 1-based copy of an index) is one line, as
posteriordb's programs write them: `for (i in 1:N) county_1[i] = county[i] + 1;`. The
model's loops always have braces: their bodies grow with the model.
"""

from __future__ import annotations

from collections.abc import Iterator

from qvr_core.export.stan.program import (
    Assign,
    Bounds,
    Comment,
    Declare,
    Draw,
    For,
    Program,
    Statement,
    Type,
)

_INDENT = "  "


def write(program: Program) -> str:
    """The text of `program`, ending with a newline."""
    out = [program.header.rstrip("\n")]
    blocks = (
        ("data", program.data, False),
        ("transformed data", program.transformed_data, True),
        ("parameters", program.parameters, False),
        ("transformed parameters", program.transformed_parameters, False),
        ("model", program.model, False),
    )
    for title, body, compact in blocks:
        if not body and title != "model":
            continue
        out.append(title + " {")
        out.extend(_lines(body, 1, compact))
        out.append("}")
    return "\n".join(out) + "\n"


def _lines(body: tuple[Statement, ...], depth: int, compact: bool) -> Iterator[str]:
    indent = _INDENT * depth
    for statement in body:
        if not isinstance(statement, For):
            yield indent + _line(statement)
            continue
        head = f"for ({statement.var} in {statement.low}:{statement.high})"
        only = statement.body[0] if len(statement.body) == 1 else None
        if compact and only is not None and not isinstance(only, For):
            yield f"{indent}{head} {_line(only)}"
            continue
        yield f"{indent}{head} {{"
        yield from _lines(statement.body, depth + 1, compact)
        yield indent + "}"


def _line(statement: Declare | Assign | Draw | Comment) -> str:
    match statement:
        case Declare(type=t, name=name, value=value, note=note):
            init = "" if value is None else f" = {value}"
            after = "" if note is None else f"  // {note}"
            return f"{_type(t)} {name}{init};{after}"
        case Assign(target=target, value=value, op=op):
            return f"{target} {op} {value};"
        case Draw(value=value, family=family, args=args, truncation=truncation):
            cut = "" if truncation is None else f" T[{truncation[0]}, {truncation[1]}]"
            return f"{value} ~ {family}({args}){cut};"
        case Comment(text=text):
            return f"// {text}"


def _type(t: Type) -> str:
    """`array[N] vector<lower=0>[K]`."""
    array = f"array[{', '.join(t.arrays)}] " if t.arrays else ""
    sizes = f"[{', '.join(t.sizes)}]" if t.sizes else ""
    return f"{array}{t.base}{_bounds(t.bounds)}{sizes}"


def _bounds(b: Bounds) -> str:
    """`<lower=0, upper=1>`, or nothing where neither is given."""
    given = (("lower", b.lower), ("upper", b.upper))
    inner = ", ".join(f"{word}={text}" for word, text in given if text is not None)
    return f"<{inner}>" if inner else ""


__all__ = ["write"]
