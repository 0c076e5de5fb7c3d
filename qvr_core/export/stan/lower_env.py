"""What the lowering of one plan has decided so far: the state every lowering module reads.

The lowering is one pass over the plan, in the order a Stan program needs its names
(plates, data, the 1-based copies, then the steps in source order), and its decisions
depend on what came before: which Stan names are taken, what each QVR name is bound to
(`Binding`: a data variable, a parameter, a model local, a summed coordinate's loop
variable), which names were refused where declared (so that a term reading one is not
a second problem). `Env` holds that state, the statements of each block as they are
built, and the problems found; the modules `lower*.py` decide, each on its part.
"""

from __future__ import annotations

from collections.abc import Callable

from qvr_core.export.plan import Plan, Unsupported
from qvr_core.export.stan.program import NO_BOUNDS, Bounds, Statement, Type
from qvr_core.export.stan.terms import Printer
from qvr_core.export.stan.values import Binding, Value
from qvr_core.text.span import Span

#: Words Stan keeps for itself (stanc3's keywords, and the words it reserves for C++:
#: `struct`, `auto`, ...): a QVR name that is one gets a trailing `_` (a data name
#: cannot: the data file names it). Names ending in `__` are Stan's too (`lp__`).
_RESERVED_WORDS = """for in while repeat until if then else true false target functions model data
    parameters quantities transformed generated profile return break continue print reject
    fatal_error int real complex vector simplex unit_vector sum_to_zero_vector ordered
    positive_ordered row_vector matrix complex_vector complex_row_vector complex_matrix
    cholesky_factor_corr cholesky_factor_cov corr_matrix cov_matrix column_stochastic_matrix
    row_stochastic_matrix sum_to_zero_matrix array tuple void lower upper offset multiplier
    jacobian struct typedef export auto extern var static"""
_RESERVED = frozenset(_RESERVED_WORDS.split())


def _identifier(name: str) -> bool:
    return (
        bool(name)
        and name[0].isalpha()
        and all(c.isalnum() or c == "_" for c in name)
        and not name.endswith("__")
        and name.isascii()
    )


def _stem(name: str) -> str:
    """`name` made the start of a Stan identifier, to which `fresh` may add digits: a
    letter first (`_x` is `v_x`), one `_` at most at its end (`lp__` is `lp_`, as Stan
    keeps names ending in `__`), other characters `_`."""
    word = "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in name)
    if not word[:1].isalpha():
        word = "v" + word
    return word.rstrip("_") + "_" if word.endswith("__") else word


class Env:
    """One plan's lowering in progress: names, blocks, problems."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.problems: list[Unsupported] = []
        self.failed: set[str] = set()  # names refused where declared (reported once)
        self.printer = Printer(self.lookup, self.problems, self.failed)
        self.names: dict[str, Binding] = {}
        self.local: list[dict[str, Binding]] = []
        self.taken: set[str] = set()
        # every QVR name of the program: a name the export makes up (a renamed name, a
        # loop's `i`, `lp_z`) is none of them, so each QVR name that can stay does
        self.own = {*plan.plates, *(d.name for d in plan.data)}
        self.own.update(s.name for s in plan.model.steps)
        self.active: list[set[str]] = []  # loop and block variables in force
        self.data: list[Statement] = []
        self.tdata: list[Statement] = []
        self.params: list[Statement] = []
        self.tparams: list[Statement] = []
        self.model: list[Statement] = []
        self.via_rows: dict[str, tuple[str, str]] = {}  # via name -> (rows, start)
        self.counts: set[str] = set()  # data a family takes as a whole number (a Binomial's N)

    def no(self, span: Span, message: str) -> None:
        """A problem: what Stan cannot say with qvr's meaning, where it is written."""
        self.problems.append(Unsupported(span, message))

    # -------------------------------------------------------------- names

    def lookup(self, name: str) -> Binding | None:
        for frame in reversed(self.local):
            if name in frame:
                return frame[name]
        return self.names.get(name)

    def stan_name(self, qvr: str, span: Span, fixed: bool = False) -> str | None:
        """The Stan name of a QVR name: itself, or with `_` where Stan keeps the word.
        `fixed`: the data file names it, so it cannot change."""
        if _identifier(qvr) and qvr not in _RESERVED and qvr not in self.taken:
            self.taken.add(qvr)
            return qvr
        if fixed:
            why = "a word Stan reserves" if qvr in _RESERVED else "not a Stan identifier"
            self.no(span, f"the data name `{qvr}` is {why}; rename it in the data too")
            return None
        return self.fresh(qvr + "_", global_=True)

    def fresh(self, base: str, global_: bool = False, keeps: bool = False) -> str:
        """A Stan name no variable in force has (`lp_z`, `i`, `county_1`), made of
        `base` (a QVR name in it made a Stan identifier: `_stem`) and no other QVR name
        of the program. `keeps`: `base` is the QVR name being bound (a local let, a
        summed-out coordinate), which may stay as it is."""
        used = self.taken.union(self.own - {base} if keeps else self.own, *self.active)
        base = _stem(base)
        name, k = base, 1
        while name in used or name in _RESERVED:
            k += 1
            name = f"{base}{k}"
        (self.taken if global_ or not self.active else self.active[-1]).add(name)
        return name

    def size(self, axis: str, data: bool = False) -> str:
        """The size of an axis as Stan reads it: the plate's int (a number in `data`,
        which is read before `transformed data` declares the plates)."""
        if axis.startswith("#"):
            return axis[1:]
        plate = self.plan.plates.get(axis)
        if plate is not None and plate.size is None:
            b = self.names.get("#" + axis)
            return b.stan if b is not None else axis
        n = plate.size if plate is not None else self.plan.module.objects[axis].size
        if data:
            return str(n)
        b = self.names.get("#" + axis)
        return b.stan if b is not None else str(n)

    def axis_known(self, axis: str) -> bool:
        if axis.startswith("#"):
            return axis[1:].isdigit()
        return axis in self.plan.plates or axis in self.plan.module.objects


def declared(
    value: Value, size: Callable[[str], str], bounds: Bounds = NO_BOUNDS, vector: str = ""
) -> Type:
    """The Stan type that declares `value` (`vector<lower=0>[School]`); `vector` names a
    constrained vector type for the event (`simplex`)."""
    sizes = tuple(size(a) for a in value.axes)
    match value.kind:
        case "int" | "real":
            return Type(value.kind, bounds=bounds)
        case "vector" | "row_vector":
            return Type(vector or value.kind, (sizes[0],), bounds)
        case "matrix":
            return Type("matrix", sizes, bounds)
        case "ints":
            return Type("int", bounds=bounds, arrays=sizes)
        case "vectors":
            return Type(vector or "vector", (sizes[1],), bounds, arrays=(sizes[0],))


__all__ = ["Env", "declared"]
