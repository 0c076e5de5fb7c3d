"""The object constructors of QVR (`object Token : FinSet 256`), each described once."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectConstructor:
    """A type constructor that takes a size: its kind, how dimensions are shown, and the
    family a kernel into such an object gets when the checker suggests one."""

    name: str
    kind: str  # the checker's factor kind
    symbol: str  # in dimension texts: `R^64`, `R+^3`; FinSet sizes are shown as `FinSet N`
    doc: str
    family: str  # the family whose support is exactly this object's values
    #: several sizes multiply into one (quivers' `fuses_sizes`: `Real 4 8` is R^32); the
    #: other constructors take exactly one size
    fuses_sizes: bool = False
    #: the options it takes in braces (quivers' `option_fields`: `Real 1 {low=0.0}`)
    options: tuple[str, ...] = ()


_CONSTRUCTORS = (
    ObjectConstructor(
        "FinSet",
        "finset",
        "FinSet",
        "A finite set of N values, 0 .. N-1 (discrete).",
        "Categorical",
    ),
    ObjectConstructor(
        "Real",
        "real",
        "R",
        "Real vectors R^N; `{low=a, high=b}` bounds every coordinate.",
        "Normal",
        fuses_sizes=True,
        options=("low", "high"),
    ),
    ObjectConstructor("Positive", "positive", "R+", "Positive vectors (0, inf)^N.", "LogNormal"),
    ObjectConstructor("Unit", "unit", "(0,1)", "Vectors in the unit cube (0, 1)^N.", "LogitNormal"),
    ObjectConstructor(
        "Simplex",
        "simplex",
        "Δ",
        "Probability vectors of length N (positive, summing to 1).",
        "Dirichlet",
    ),
)

OBJECT_CONSTRUCTORS: dict[str, ObjectConstructor] = {c.name: c for c in _CONSTRUCTORS}

#: quivers' other object constructors: the parser reads them, the checker does not type
#: their objects yet (QVR011).
UNTYPED_CONSTRUCTORS = (
    "Sphere",
    "Ball",
    "CholeskyFactor",
    "Covariance",
    "Correlation",
    "Orthogonal",
    "Stiefel",
    "LowerTriangular",
    "Diagonal",
)
BY_KIND: dict[str, ObjectConstructor] = {c.kind: c for c in _CONSTRUCTORS}
#: The connectives `FreeResiduated(Atoms, ops=[...])` closes its atoms under (quivers
#: 0.25.2, `stochastic/categories.py`, `BUILTIN_CONSTRUCTOR_NAMES`): `slash` makes A/B and
#: A\\B, `product` A⊗B, `unit` the unit I, `diamond` ◇A and `box` □A.
RESIDUATED_CONNECTIVES = ("slash", "product", "unit", "diamond", "box")
#: The constructor of finite sets: plates, and the values an index takes.
FINSET = BY_KIND["finset"].name
#: quivers 0.1-0.4's constructor names, by the name they have since 0.11.
LEGACY_CONSTRUCTORS: dict[str, str] = {"Euclidean": "Real"}

#: The kinds a Bayesian program's parameter is written with (`program p(G : FinSet, s : Real)`):
#: a value the caller, or else the data, gives; or a plate the caller picks, which makes
#: the program a template run through a program that calls it.
#: The kind of a parameter that is one real number (`s : Real`).
REAL_PARAMETER = "Real"
PARAMETER_KINDS: dict[str, str] = {
    REAL_PARAMETER: "value",
    "Nat": "value",
    "Int": "value",
    "FinSet": "plate",
    "Space": "plate",
    "Object": "plate",
}
VALUE_KINDS = tuple(k for k, role in PARAMETER_KINDS.items() if role == "value")
PLATE_KINDS = tuple(k for k, role in PARAMETER_KINDS.items() if role == "plate")
#: quivers' free monoid object: `FreeMonoid(Atoms, max_length=n)`, the words of length 0
#: to n over a finite set (0.25.2, `core/objects.py`).
FREE_MONOID = "FreeMonoid"
