"""What every part of the PyMC lowering reads of one plan: sizes, names and shapes.

The problems (`problems.py`) and the statements (`lower.py`, `lower_scopes.py`) ask the
same questions of a site (how many values a summed coordinate takes, the size of one
draw, which axes have names), so both ask one `Context`, built once per plan.
"""

from __future__ import annotations

from qvr_core.builtins import FAMILIES
from qvr_core.check.model import Argument, Site, axis_plates, one_entry
from qvr_core.export.plan import Plan
from qvr_core.export.pymc.families import keywords
from qvr_core.export.pymc.names import python_names, variable_names
from qvr_core.export.pymc.terms import TermPrinter, number


class Context:
    """One plan as the lowering reads it. `coords` grows as statements name a second axis
    along a plate (`State_2`): those are coordinates of the model too."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.model = plan.model
        self.tree = plan.model.tree
        objects = plan.module.objects
        self.sizes = {n: o.size for n, o in objects.items()}
        self.sizes.update({n: p.size for n, p in plan.plates.items() if p.size is not None})
        self.one_entry = one_entry(self.sizes)
        self.params = [p for p in self.model.params if p.real]
        self.names = python_names(plan, self.params)
        self.variables = variable_names(plan, self.params)
        integers = {d.name for d in plan.data if d.integer}
        for site in self.model.sites:
            discrete = site.family in FAMILIES and FAMILIES[site.family].discrete
            if discrete or site.kind == "marginalize":
                integers.add(site.name)
        self.printer = TermPrinter(self.names, set(objects), self.one_entry, integers)
        self.coords: dict[str, str] = {}  # dim -> its coordinate values (Python text)

    def py(self, name: str) -> str:
        return self.names.get(name, name)

    def variable(self, name: str) -> str:
        """The PyMC variable's name of a QVR name, as a Python string literal."""
        return f'"{self.variables.get(name, name)}"'

    # ------------------------------------------------------------ shapes

    def dims(self, names: tuple[str, ...]) -> list[str]:
        """The dims of plates (a one-entry plate has no axis)."""
        return list(axis_plates(names, self.sizes))

    def shape(self, plates: tuple[str, ...], *event: int) -> str:
        """The shape of plated values as a Python tuple (a size only the data fixes read
        from the coordinates), then the `event` sizes."""
        sizes = [
            str(self.sizes[p]) if p in self.sizes else f'len(coords["{p}"])'
            for p in self.dims(plates)
        ]
        sizes += [str(n) for n in event]
        return f"({', '.join(sizes)},)" if sizes else "()"

    def data_axis(self, plate: str) -> tuple[str, int] | None:
        """A data variable with an axis along `plate`, and which axis (sizes it at fit time)."""
        for d in self.plan.data:
            axes = self.dims(d.axes)
            if plate in axes:
                return d.name, axes.index(plate)
        return None

    def event_size(self, site: Site) -> int | None:
        """The size of one draw of a vector family, as the runtime's `event_size` reads it."""
        if site.over and site.kind != "marginalize":
            n = 1
            for o in site.over:
                if self.sizes.get(o) is None:
                    return None
                n *= self.sizes[o]
            return n
        event = site.type.element.event if site.type is not None else ()
        return event[-1] if event and event[-1] >= 0 else None

    def event_dims(self, site: Site) -> list[str] | None:
        """The names of the axes of one draw of a vector family; None where they have none
        (a draw over a product of plates, flattened)."""
        assert site.family is not None
        if not FAMILIES[site.family].event_rank:
            return []
        if FAMILIES[site.family].event_rank != 1:
            return None
        size = self.event_size(site)
        if len(site.over) == 1:
            name: str | None = site.over[0]
        else:
            name = site.type.element.of if site.type is not None and not site.over else None
        if name is None or self.sizes.get(name) != size:
            return None
        return [name]

    def site_dims(self, site: Site) -> list[str] | None:
        """The dims of a site's value (batch, then event), each name once (a second use of
        a plate is `State_2`), or None where an axis has no name."""
        event = self.event_dims(site)
        if event is None:
            return None
        return self.unique([*self.dims(site.plates), *event])

    def unique(self, names: list[str]) -> list[str]:
        """Dims named once each: a plate's second axis is `State_2` (a coordinate too)."""
        dims: list[str] = []
        for name in names:
            dim, k = name, 1
            while dim in dims:
                k += 1
                dim = f"{name}_{k}"
            if dim != name:
                self.coords[dim] = self.coord(name)
            dims.append(dim)
        return dims

    def values(self, site: Site) -> int | None:
        """How many values a marginalized coordinate takes."""
        assert site.family is not None
        family = site.summed_family
        assert family is not None
        if family.support.kind == "boolean":
            return 2
        if family.support.kind == "integer_interval":  # 0 .. its total_count
            count = next((a.literal for a in site.args if a.param == family.support.high), None)
            if isinstance(count, float) and count.is_integer() and count >= 0:
                return int(count) + 1
            return None
        of = site.type.element.of if site.type is not None else None
        if of is not None and self.sizes.get(of):
            return self.sizes[of]
        for a in site.args:
            event = a.type.element.event if a.type is not None else ()
            if event and event[-1] > 0:
                return event[-1]
            if isinstance(a.literal, tuple):
                return len(a.literal)
        return None

    def scalar(self, a: Argument, *, known: bool = True) -> bool:
        """The argument is one number (a vector parameter given so is spread); `known`
        False: or may be one (data the checker does not size)."""
        if a.literal is not None:
            return isinstance(a.literal, float)
        if a.index:
            return False
        t = a.type
        if t is None:
            return not known
        return not t.plates and not t.element.event and not (known and t.data_plates)

    def coord(self, plate: str) -> str:
        """A plate's coordinate values: its entries, counted by the data when only the
        data fixes its size."""
        size = self.sizes.get(plate)
        if size is not None:
            return f"range({size})"
        found = self.data_axis(plate)
        assert found is not None  # `unsupported` refused the plan otherwise
        name, axis = found
        return f"range(np.shape({self.py(name)})[{axis}])"

    def array(self, name: str, integer: bool) -> str:
        """A data variable's values as an array the model reads (indices as integers)."""
        if name in self.model.observed_lets:  # computed from the data by its let, above
            return self.py(name)
        dtype = "int64" if integer else "float64"
        return f'np.asarray({self.py(name)}, dtype="{dtype}")'

    # ------------------------------------------------------------ values

    def family_args(
        self, site: Site, family_name: str | None = None, *, named: bool = False
    ) -> list[str]:
        """`mu=..., sigma=...` of a site's family call (`family_name`: the family a
        marginalize sums), a number for a vector parameter spread to one draw's size."""
        name = family_name or site.family
        assert name is not None
        family = FAMILIES[name]
        size = self.event_size(site)
        texts = {}
        for a in site.args:
            param = family.param(a.param)
            if param is None:
                continue
            value = self.argument(a)
            if param.rank == 1 and self.scalar(a, known=False) and size is not None:
                spread = f"np.full({size}, {value})" if a.literal is not None else None
                value = spread or f"{value} * np.ones({size})"
            texts[a.param] = value
        return keywords(name, texts, named=named)

    def argument(self, a: Argument) -> str:
        if isinstance(a.literal, float):
            return number(a.literal)
        if isinstance(a.literal, tuple):
            return f"np.array([{', '.join(number(v) for v in a.literal)}])"
        assert a.name is not None
        if not a.index:
            return self.py(a.name)
        return self.printer.gather(a.name, a.index, a.index_plates)


def summed_name(site: Site) -> str:
    """The family a `marginalize` sums out (a relaxation's discrete family)."""
    family = site.summed_family
    assert family is not None  # a marginalize is of a family
    return family.name


__all__ = ["Context", "summed_name"]
