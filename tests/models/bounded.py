"""Programs with a `BoundedFlat` prior that the runtime's and the exporters' tests of it
read: one bounded by data, one whose upper bound is a let of another latent (garch11's
`real<lower=0, upper=(1 - alpha1)> beta1;`)."""

from __future__ import annotations


def between(rows: int) -> str:
    """`b` flat between the data `lo` and `hi`, observed through a Normal of scale 1."""
    return (
        f"object Obs : FinSet {rows}\n\n"
        "program between : Obs -> Obs\n"
        "    sample b <- BoundedFlat(lo, hi)\n"
        "    observe y : Obs <- Normal(b, 1.0)\n"
        "    return b\n\n"
        "export between\n"
    )


def persistence(rows: int, family: str = "BoundedFlat") -> str:
    """`beta1` flat on (0, 1 - alpha1) (or `family` there, a Uniform to compare), the two
    summed in the mean of the observations."""
    return (
        f"object Obs : FinSet {rows}\n\n"
        "program persistence : Obs -> Obs\n"
        "    sample alpha1 <- Uniform(0.0, 1.0)\n"
        "    let beta_max = 1.0 - alpha1\n"
        f"    sample beta1 <- {family}(0.0, beta_max)\n"
        "    let mu = alpha1 + beta1\n"
        "    observe y : Obs <- Normal(mu, 0.5)\n"
        "    return mu\n\n"
        "export persistence\n"
    )
