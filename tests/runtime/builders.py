"""Build checker types by hand, for testing runtime blocks without the checker."""

from __future__ import annotations

from qvr_core.check.types import Arrow, ObjectType, Product, Seq


def obj(name: str, kind: str, size: int) -> ObjectType:
    return ObjectType(name, kind, size)


def fin(name: str, n: int) -> Product:
    return Product((obj(name, "finset", n),), (name,))


def real(name: str, n: int, kind: str = "real") -> Product:
    return Product((obj(name, kind, n),), (name,))


def prod(*parts: Product) -> Product:
    return Product(
        tuple(f for p in parts for f in p.factors), tuple(n for p in parts for n in p.written)
    )


def arrow(dom: Product | Seq, cod: Product | Seq) -> Arrow:
    return Arrow(dom, cod)


def seq(p: Product) -> Seq:
    return Seq(p)
