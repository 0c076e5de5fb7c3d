"""The NumPyro module an export writes, as a tree: what `lower` decides, `printer` writes.

Each node is one thing the generated Python module holds, with every choice already
made: which names, which plates open around which steps (a `with` block is a node
with the statements inside it, not an indentation the printer keeps), which calls
enumerate, what the imports are. Expressions are text already (the term printer's,
`terms.Terms`), since NumPyro's spelling of a term is a decision of its own; the
statements around them are nodes, so their layout (indentation, where a long call
breaks) is the printer's alone.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Assign:
    """`target = value`: a plain `let`, arithmetic that leaves no trace entry."""

    target: str
    value: str


@dataclass(frozen=True)
class DeterministicSite:
    """`target = numpyro.deterministic("site", value)`: a `let` the program returns."""

    target: str
    site: str
    value: str


@dataclass(frozen=True)
class Factor:
    """`numpyro.factor("site", value)`: a `score`."""

    site: str
    value: str


@dataclass(frozen=True)
class Sample:
    """`target = numpyro.sample("site", distribution, ...)`: one site. `target` None
    where nothing reads an observation back; `observed` the keyword it is given by
    (`obs=`); `enumerate` where NumPyro sums it out (parallel enumeration)."""

    target: str | None
    site: str
    distribution: str
    observed: str | None
    enumerate: bool


@dataclass(frozen=True)
class PlateFrame:
    """`numpyro.plate("label", size, dim=dim)`; `dim` None where it is left implicit."""

    label: str
    size: str
    dim: int | None


@dataclass(frozen=True)
class PlateBlock:
    """`with <frames>:` and the statements that run inside those plates."""

    frames: tuple[PlateFrame, ...]
    body: tuple[Statement, ...]


Statement = Assign | DeterministicSite | Factor | Sample | PlateBlock


@dataclass(frozen=True)
class Parameter:
    """One parameter of `model`: `optional` ones default to None (the model draws them)."""

    name: str
    optional: bool


@dataclass(frozen=True)
class Return:
    """What `model` returns: the `values` as a tuple, or a dict keyed by `labels`."""

    values: tuple[str, ...]
    labels: tuple[str, ...]


@dataclass(frozen=True)
class ModelFunction:
    """`def model(<params>):` with its one-line docstring, its body and its return."""

    params: tuple[Parameter, ...]
    doc: str
    body: tuple[Statement, ...]
    returns: Return | None


@dataclass(frozen=True)
class Datum:
    """One entry of `load_data`'s dict: `"key": jnp.asarray(raw["field"], dtype=dtype)`,
    its `axes` named in a comment."""

    key: str
    field: str
    dtype: str
    axes: tuple[str, ...]


@dataclass(frozen=True)
class Computed:
    """The observed lets `load_data` computes from the data (`names`, QVR's), into the
    dict it names `data`, by `body`'s assignments, before it returns that dict."""

    data: str
    names: tuple[str, ...]
    body: tuple[Assign, ...]


@dataclass(frozen=True)
class Loader:
    """`def load_data(path):`: the JSON data file as `model`'s keyword arguments."""

    data: tuple[Datum, ...]
    computed: Computed | None


@dataclass(frozen=True)
class Main:
    """The `__main__` block: NUTS with these chains and draws, on a data file given on
    the command line where the model reads data."""

    reads_data: bool
    chains: int
    warmup: int
    samples: int


@dataclass(frozen=True)
class Module:
    """The whole file: its header comment lines, its docstring, its import groups (each
    a block of lines), the definitions `model` calls beyond NumPyro's (each a block of
    lines: `measures.TRUNCATED_BY_CDF`), `model`, `load_data` and the `__main__` block."""

    header: str
    doc: str
    imports: tuple[tuple[str, ...], ...]
    model: ModelFunction
    loader: Loader
    main: Main
    helpers: tuple[tuple[str, ...], ...] = ()


__all__ = [
    "Assign",
    "Computed",
    "Datum",
    "DeterministicSite",
    "Factor",
    "Loader",
    "Main",
    "ModelFunction",
    "Module",
    "Parameter",
    "PlateBlock",
    "PlateFrame",
    "Return",
    "Sample",
    "Statement",
]
