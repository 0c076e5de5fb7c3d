"""Write docs/families.md, the family catalogue, from the registry (`qvr_core.builtins`).

    .venv/bin/python scripts/gen_families_doc.py [--check]

`--check` exits 1 when the committed page is stale (tests/builtins/test_agreement.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from qvr_core.builtins import FAMILIES, Family  # noqa: E402
from qvr_core.builtins.families import codomain_words  # noqa: E402

PAGE = ROOT / "docs" / "families.md"

HEAD = """\
# Distribution families

Generated from the registry (`qvr_core/builtins/families.py`) by
`scripts/gen_families_doc.py`; do not edit by hand. Hover and completion show the
same text.

The catalogue follows quivers 0.25 (its family schemas and registry). Each family
has a torch distribution in `qvr_core/runtime/distributions.py`, but `GP`, which only
a morphism can have (its covariance is evaluated at the morphism's input). Parameters are
listed in positional order; a call may also name them (`Normal(loc=0.0, scale=1.0)`);
where a family has two parameterisations, either complete set is accepted. No
parameter has a default: as in quivers, a call gives each one.

`Flat` and `HalfFlat` are qvr's own (quivers has none): improper flat priors on the
real line and on (0, inf), Stan's parameters with no prior statement, written bare
(`sample sigma <- HalfFlat`). Their density does not integrate, so they are a latent's
prior only and have no draws: a run that would draw from the prior (`--method prior`,
synthetic data) is refused, while NUTS and SVI on data run. `BoundedFlat(low, high)` is
the same between bounds its arguments give (log density 0, not a `Uniform`'s
-log(high - low)), Stan's `real<lower=..., upper=...>` parameter with no statement; with
bounds that read another latent, NUTS moves it within each evaluation's bounds, as Stan
does, and SVI refuses it (a guide maps a latent onto its support once).

**Draw**: the shape of one draw. *scalar* draws are independent per dimension of the
object they land in; a vector or matrix draw takes its size from the arguments named
(or from the object). **Morphism**: whether it can follow `~` on a `role=kernel`
morphism, whose parameter network then gives its parameters (see
`docs/language.md`). With arguments, `~ F(args)`, every family whose values are
numbers or one vector (not a count, not a matrix) can: the arguments fix those
parameters and the network gives the rest. A family whose one draw is a vector or a
matrix fills one Real object, a matrix row by row, as quivers' conditional
multivariate families do: the network gives each parameter whole (a Cholesky factor
by its lower triangle), `GP` learns its own length scale and amplitude, and
`Horseshoe` its global scale, with no network (its draws do not depend on the input).

| family | parameters | values | draw | morphism |
|---|---|---|---|---|
"""

TAIL = """
The operators of quivers' measure algebra (`Mixture`, `Restrict` and its other name
`Truncate`, `Truncated`, `Normalize`, `PointMass`, `Pushforward` and its other name
`Transformed`, `Independent`) take distributions as arguments: their values are whatever
the distributions they are built from give (docs/language.md, "Distributions built from
distributions").

`LKJCorrelationFactor` is another name of `LKJCholesky`: quivers' draws and scores the
same Cholesky factors, and the checker records its sites as `LKJCholesky`'s. `Horseshoe`
scores by quivers' 16-point quadrature over the local scale (docs/language.md, "Families").
Every family of quivers 0.25.2's `family_schemas` is in the catalogue.
"""


def _draw(f: Family) -> str:
    """`scalar`, `vector, length of loc (+ 1)`, `matrix, rows of loc x columns of loc`."""
    if not f.event:
        return "scalar"
    words = ["length"] if len(f.event) == 1 else ["rows", "columns"]
    axes = []
    for word, axis in zip(words, f.event, strict=True):
        names = " or ".join(f"`{n}`" for n, _ in axis.sources)
        plus = f" + {axis.offset}" if axis.offset else ""
        axes.append(
            f"{word} of {names}{plus}, else the object's size" if names else "the object's size"
        )
    return ("vector; " if len(axes) == 1 else "matrix; ") + " by ".join(axes)


def _row(f: Family) -> str:
    schemas = " or ".join(
        ", ".join(f"`{p.name}` ({p.constraint.describe()})" for p in s) for s in f.schemas
    )
    values = (
        "the network's output"
        if f.dirac
        else "those of its distributions"
        if f.measure is not None
        else f.support.describe()
    )
    kernel = f"yes: {codomain_words(f)}" if f.kernel is not None else "not yet"
    if f.measure is not None:
        kernel = "no: a step's distribution"
    if f.improper:
        kernel = "no: an improper prior"
    return f"| `{f.name}` | {schemas or 'none'} | {values} | {_draw(f)} | {kernel} |"


def render() -> str:
    rows = [_row(f) for f in FAMILIES.values()]
    return HEAD + "\n".join(rows) + "\n" + TAIL


def main(argv: list[str]) -> int:
    fresh = render()
    current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
    if "--check" in argv:
        if fresh != current:
            print(f"{PAGE} is stale: run .venv/bin/python scripts/gen_families_doc.py")
            return 1
        return 0
    if fresh != current:
        PAGE.write_text(fresh, encoding="utf-8")
        print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
