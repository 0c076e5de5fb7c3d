"""Where each `let` lives in the Stan program, and its declaration there.

Stan computes a value once where it can: a let that reads only data is `transformed
data` (computed once, before sampling), one the program returns is a `transformed
parameter` (saved with every draw, as qvr saves it), with the lets it reads; the others
are locals of the `model` block, or of a scope's loop. A `score` adds its term to the
log density (`target`), or to the value of the scope it is in.
"""

from __future__ import annotations

from qvr_core.check.model import Let, Node
from qvr_core.export.stan.lower_env import Env, declared
from qvr_core.export.stan.program import Assign, Declare, For, Statement
from qvr_core.export.stan.values import REAL, Binding, Ctx, Value, words


def let_blocks(env: Env, tree: tuple[Node, ...]) -> dict[str, str]:
    """Where each `let` outside the scopes lives: `tdata` (it reads data only),
    `tparam` (returned, or read by one that is), else `model`."""
    data_names = {d.name for d in env.plan.data}
    lets = {n.step.name: n.step for n in tree if isinstance(n.step, Let)}
    kinds: dict[str, str] = {}
    for name, let in lets.items():
        if let.kind == "let" and all(u in data_names or kinds.get(u) == "tdata" for u in let.uses):
            kinds[name] = "tdata"
    wanted = [n for n in env.plan.model.returns if n in lets and kinds.get(n) != "tdata"]
    while wanted:
        name = wanted.pop()
        if kinds.get(name) in ("tparam", "tdata") or lets[name].kind != "let":
            continue
        kinds[name] = "tparam"
        wanted.extend(u for u in lets[name].uses if u in lets)
    # a transformed parameter reads data and parameters only: one that reads a `score`
    # (a model local) stays in the model, and so does what reads it
    early = ("tparam", "tdata")
    while bad := [
        n
        for n, kind in kinds.items()
        if kind == "tparam" and any(u in lets and kinds.get(u) not in early for u in lets[n].uses)
    ]:
        for n in bad:
            del kinds[n]
    return kinds


def declare_let(env: Env, let: Let, ctx: Ctx, block: str) -> Declare | None:
    """`type name = expr;`, and the name bound (in the innermost frame in force)."""
    p = env.printer.expr(let.term, ctx)
    if p is None:
        return None
    expected = tuple(a for a in env.plan.axes(let.name) if a not in ctx)
    if let.type is not None and p.value.plates != expected:
        rows = let.type.data_plates and let.name not in env.plan.rows
        why = (
            f"`{let.name}` runs over rows only the data sizes, and no observation over a "
            "plate reads it to say which"
            if rows
            else f"qvr gives `{let.name}` the plates {words(expected)} but the export "
            f"computes it over {words(p.value.plates)}"
        )
        env.no(let.step.span, why)
        return None
    value = REAL if p.value.kind == "int" else p.value
    frame = env.local[-1] if env.local else env.names
    name = env.fresh(let.name, keeps=True) if env.local else env.stan_name(let.name, let.step.span)
    if name is None:
        return None
    frame[let.name] = Binding(name, value, block=block)
    return Declare(declared(value, env.size), name, p.text)


def let_by_entry(env: Env, let: Let, mark: int) -> list[Statement]:
    """A let of the data over one plate that Stan cannot compute vectorised (a
    comparison: the dummy `age == 2`), computed in `transformed data` entry by entry,
    as posteriordb's programs do: `for (i in 1:Row) age2[i] = age[i] == 2.0;`. Where
    that fails too, the vectorised attempt's problems (from `mark` on) stand."""
    axes = env.plan.axes(let.name)
    if len(axes) != 1 or let.type is None or let.type.element.event:
        return []
    tried = env.problems[mark:]
    del env.problems[mark:]
    env.active.append(set())
    i = env.fresh("i")
    p = env.printer.expr(let.term, {axes[0]: i})
    env.active.pop()
    name = env.stan_name(let.name, let.step.span) if p is not None else None
    if p is None or not p.value.scalar or name is None:
        env.problems[mark:] = tried
        return []
    value = Value("vector", axes)
    env.names[let.name] = Binding(name, value, block="tdata")
    n = env.size(axes[0])
    return [
        Declare(declared(value, env.size), name),
        For(i, "1", n, (Assign(f"{name}[{i}]", p.text),)),
    ]


def score(env: Env, step: Let, ctx: Ctx, out: list[Statement], add: str) -> None:
    """A `score` added to `add` (`target`, or the slot of a scope's value): its let
    first where another step reads it, and summed where the slot takes a number."""
    p = env.printer.expr(step.term, ctx)
    if p is None:
        return
    read = any(step.name in s.reads() for s in env.plan.model.steps if s is not step)
    if read:
        declaration = declare_let(env, step, ctx, "model")
        if declaration is None:
            return
        out.append(declaration)
        b = env.lookup(step.name)
        assert b is not None
        text = b.stan
    else:
        text = p.text
    out.append(Assign(add, text if p.value.scalar or add == "target" else f"sum({text})", "+="))


__all__ = ["declare_let", "let_blocks", "let_by_entry", "score"]
