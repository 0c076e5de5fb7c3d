"""The text of a PyMC module tree (`tree.Module`): layout only.

Everything the module says was decided by the lowering; here each node is written at its
indentation (four spaces a body), a call on one line when it fits in 100 columns and
else one argument a line, and the sections two empty lines apart, as a PyMC user (and
`ruff format`) writes them. Nothing here fails or looks at a plan.
"""

from __future__ import annotations

from qvr_core.export.pymc.tree import (
    AddTerm,
    Assign,
    Blank,
    Call,
    Comment,
    Coords,
    For,
    FunctionDef,
    If,
    Import,
    LogP,
    Module,
    Return,
    Source,
    Statement,
    Value,
    With,
)

#: The widest line a call or the coordinates are written on before they are broken.
WIDTH = 100
_STEP = "    "


def write(module: Module) -> str:
    """The module's text, ending in a newline."""
    out = [module.header, ""]
    for k, group in enumerate(module.imports):
        if k:
            out.append("")
        out += [_import(i) for i in group]
    for section in module.sections:
        out += ["", "", *_statements(section, "")]
    return "\n".join(out) + "\n"


def _import(i: Import) -> str:
    return f"import {i.module}" if i.alias is None else f"import {i.module} as {i.alias}"


def _statements(body: tuple[Statement, ...], ind: str) -> list[str]:
    lines: list[str] = []
    for s in body:
        lines += _statement(s, ind)
    return lines


def _statement(s: Statement, ind: str) -> list[str]:
    match s:
        case Assign(target=target, value=value):
            head = f"{ind}{target} = " if target is not None else ind
            return [_value(head, value, ind)]
        case AddTerm(term=term, groups=groups, via=via):
            text = term if isinstance(term, str) else _logp(term, ind + _STEP)
            args = [text, groups, *([f"via={via}"] if via is not None else [])]
            return [_call(f"{ind}lp = lp + per_group", args, ind)]
        case Comment(text=text, marker=marker):
            return [f"{ind}{marker} {text}"]
        case Blank():
            return [""]
        case Source(lines=lines):
            return [f"{ind}{line}" if line else "" for line in lines]
        case Import():
            return [f"{ind}{_import(s)}"]
        case Coords(entries=entries):
            return _coords(entries, ind)
        case Return(value=value):
            return [f"{ind}return {value}"]
        case FunctionDef():
            return _function(s, ind)
        case For(target=target, iterable=iterable, body=body):
            return [f"{ind}for {target} in {iterable}:", *_statements(body, ind + _STEP)]
        case With(context=context, target=target, body=body):
            bound = f" as {target}" if target is not None else ""
            return [f"{ind}with {context}{bound}:", *_statements(body, ind + _STEP)]
        case If(test=test, body=body):
            return [f"{ind}if {test}:", *_statements(body, ind + _STEP)]


def _function(f: FunctionDef, ind: str) -> list[str]:
    inner = ind + _STEP
    lines = [f"{ind}@{f.decorator.name}  # {f.decorator.why}"] if f.decorator else []
    returns = f" -> {f.returns}" if f.returns is not None else ""
    lines.append(f"{ind}def {f.name}({', '.join(f.params)}){returns}:")
    doc = f.doc.replace("\n", "\n" + inner)
    lines.append(f'{inner}"""{doc}"""')
    return lines + _statements(f.body, inner)


def _value(head: str, value: Value, ind: str) -> str:
    """`head` (the statement's indentation and target) followed by `value`: a call laid
    out from there, a log density on one line around its distribution, text as it is."""
    if isinstance(value, Call):
        return _call(f"{head}{value.fn}", _arguments(value, ind), ind)
    if isinstance(value, LogP):
        return f"{head}{_logp(value, ind)}"
    return f"{head}{value}"


def _logp(logp: LogP, ind: str) -> str:
    """`pm.logp(dist, value)` on one line but for its distribution, which is broken (at
    the statement's indentation) where it alone, counted from its name, is long."""
    dist = _call(logp.dist.fn, _arguments(logp.dist, ind), ind)
    return f"pm.logp({dist}, {logp.value})"


def _arguments(call: Call, ind: str) -> list[str]:
    """A call's arguments as text, `dims` last. A keyword call is laid out as a call of
    its own at the indentation of the arguments, its width counted from its keyword."""
    out = []
    for a in call.args:
        if isinstance(a, str):
            out.append(a)
        else:
            inner = ind + _STEP
            out.append(_call(f"{a.keyword}={a.call.fn}", _arguments(a.call, inner), inner))
    return out + _dims(call.dims)


def _dims(dims: tuple[str, ...]) -> list[str]:
    if not dims:
        return []
    if len(dims) == 1:
        return [f'dims="{dims[0]}"']
    return [f"dims=({', '.join(repr(d).replace(chr(39), chr(34)) for d in dims)})"]


def _call(head: str, args: list[str], ind: str) -> str:
    """`head(a, b)` on one line when it fits in 100 columns (counted from the start of
    `head`), else one argument a line, the closing parenthesis at `ind`."""
    one = f"{head}({', '.join(args)})"
    if len(one) <= WIDTH and "\n" not in one:
        return one
    inner = ind + _STEP
    parts = "".join(f"{inner}{a.strip() if chr(10) not in a else a.lstrip()},\n" for a in args)
    return f"{head}(\n{parts}{ind})"


def _coords(entries: tuple[tuple[str, str], ...], ind: str) -> list[str]:
    """The coordinates on one line when they fit, else one a line (none: an empty dict
    that says its type)."""
    if not entries:
        return [f"{ind}coords: dict[str, range] = {{}}"]
    texts = [f'"{dim}": {values}' for dim, values in entries]
    one = f"{ind}coords = {{{', '.join(texts)}}}"
    if len(one) <= WIDTH:
        return [one]
    return [f"{ind}coords = {{", *(f"{ind}{_STEP}{e}," for e in texts), f"{ind}}}"]


__all__ = ["WIDTH", "write"]
