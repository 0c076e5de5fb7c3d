"""The NumPyro module tree (`module.Module`) written as Python source.

The tree has every decision in it; this only lays it out: the blank lines between
the parts of the file, four spaces a level of `with` and `def`, string literals,
and a `numpyro.sample` call broken over lines where it would pass `_WIDTH`. It
cannot fail: every tree `lower` builds is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from qvr_core.export.numpyro.module import (
    Assign,
    DeterministicSite,
    Factor,
    Loader,
    Main,
    ModelFunction,
    Module,
    PlateBlock,
    PlateFrame,
    Return,
    Sample,
    Statement,
)
from qvr_core.export.numpyro.terms import literal

#: Generated lines are kept to this width where a call can be split.
_WIDTH = 99
_INDENT = "    "
_ENUMERATE = 'infer={"enumerate": "parallel"}'


def print_module(m: Module) -> str:
    """The module's text: head (header, docstring, imports), the helpers, `model`,
    `load_data`, `__main__`, two blank lines apart as a Python file keeps its top-level
    blocks."""
    head = [m.header.rstrip("\n"), f'"""{m.doc}"""', *("\n".join(g) for g in m.imports)]
    helpers = ["\n".join(h) for h in m.helpers]
    parts = ["\n\n".join(head), *helpers, _model(m.model), _loader(m.loader), _main(m.main)]
    return "\n\n\n".join(parts) + "\n"


# ---------------------------------------------------------------- the model


def _model(f: ModelFunction) -> str:
    params = ", ".join(f"{p.name}=None" if p.optional else p.name for p in f.params)
    lines = [f"def model({params}):", f'{_INDENT}"""{f.doc}"""']
    _statements(f.body, 1, lines)
    if f.returns is not None:
        lines.append(f"{_INDENT}{_return(f.returns)}")
    return "\n".join(lines)


def _return(r: Return) -> str:
    if r.labels:
        inner = ", ".join(f"{literal(k)}: {v}" for k, v in zip(r.labels, r.values, strict=True))
        return f"return {{{inner}}}"
    return f"return {', '.join(r.values)}"


def _statements(body: Sequence[Statement], depth: int, lines: list[str]) -> None:
    indent = _INDENT * depth
    for s in body:
        match s:
            case Assign(target=target, value=value):
                lines.append(f"{indent}{target} = {value}")
            case DeterministicSite(target=target, site=site, value=value):
                lines.append(f"{indent}{target} = numpyro.deterministic({literal(site)}, {value})")
            case Factor(site=site, value=value):
                lines.append(f"{indent}numpyro.factor({literal(site)}, {value})")
            case Sample():
                _sample(s, indent, lines)
            case PlateBlock(frames=frames, body=inner):
                lines.append(f"{indent}with {', '.join(_plate(p) for p in frames)}:")
                _statements(inner, depth + 1, lines)


def _plate(p: PlateFrame) -> str:
    dim = f", dim={p.dim}" if p.dim is not None else ""
    return f"numpyro.plate({literal(p.label)}, {p.size}{dim})"


def _sample(s: Sample, indent: str, lines: list[str]) -> None:
    """`numpyro.sample(...)` on one line, or split over lines where it would be too
    wide: its arguments on one line of their own, or one a line."""
    head = f"{s.target} = numpyro.sample" if s.target is not None else "numpyro.sample"
    args = [literal(s.site), s.distribution]
    if s.observed is not None:
        args.append(f"obs={s.observed}")
    if s.enumerate:
        args.append(_ENUMERATE)
    line = f"{indent}{head}({', '.join(args)})"
    if len(line) <= _WIDTH:
        lines.append(line)
        return
    lines.append(f"{indent}{head}(")
    inner = f"{indent}{_INDENT}{', '.join(args)}"
    if len(inner) <= _WIDTH:
        lines.append(inner)
    else:
        lines += [f"{indent}{_INDENT}{a}," for a in args]
    lines.append(f"{indent})")


# ---------------------------------------------------------------- data and __main__


def _loader(loader: Loader) -> str:
    computed = loader.computed
    lines = [
        "def load_data(path):",
        '    """The JSON data file qvr reads (indices from 0, as qvr reads them), as the',
        '    keyword arguments of `model`."""',
        '    with open(path, encoding="utf-8") as f:',
        "        raw = json.load(f)",
        "    return {" if computed is None else f"    {computed.data} = {{",
    ]
    for d in loader.data:
        axes = f"  # {' x '.join(d.axes)}" if d.axes else ""
        value = f"jnp.asarray(raw[{literal(d.field)}], dtype={d.dtype})"
        lines.append(f"        {literal(d.key)}: {value},{axes}")
    lines.append("    }")
    if computed is not None:
        lines.append(
            "    # computed from the data, as qvr computes them before a run: "
            + ", ".join(computed.names)
        )
        lines += [f"    {a.target} = {a.value}" for a in computed.body]
        lines.append(f"    return {computed.data}")
    return "\n".join(lines)


def _main(main: Main) -> str:
    """NUTS with float64 and one CPU device per chain (set before JAX starts its
    backend); a model with data reads its data file from the command line."""
    lines = [
        'if __name__ == "__main__":',
        "    from numpyro.infer import MCMC, NUTS",
        "",
    ]
    if main.reads_data:
        lines += [
            "    if len(sys.argv) != 2:",
            '        sys.exit(f"usage: python {sys.argv[0]} DATA.json")',
        ]
    lines += [
        f"    numpyro.set_host_device_count({main.chains})",
        '    jax.config.update("jax_enable_x64", True)  # float64, as qvr computes',
        f"    mcmc = MCMC(NUTS(model), num_warmup={main.warmup}, num_samples={main.samples}, "
        f"num_chains={main.chains})",
        "    mcmc.run(jax.random.PRNGKey(0)"
        + (", **load_data(sys.argv[1]))" if main.reads_data else ")"),
        "    mcmc.print_summary()",
    ]
    return "\n".join(lines)


__all__ = ["print_module"]
