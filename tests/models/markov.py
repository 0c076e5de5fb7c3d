"""Programs with a `MarkovChain` that the runtime's and the checker's tests of it read: a
hidden Markov model whose chain a `marginalize` sums out, and the same chain observed."""

from __future__ import annotations


def hidden(steps: int, initial: bool = False) -> str:
    """Two hidden states over `steps` steps, each emitting y around its own mean; the
    transition's rows are two Dirichlet draws (one per state), `initial` a third."""
    start = "    sample start <- Dirichlet(1.0) [over=State]\n" if initial else ""
    args = "theta, start" if initial else "theta"
    return (
        f"object State : FinSet 2\nobject Time : FinSet {steps}\n\n"
        "program hidden : Time -> Time\n"
        "    sample theta <- Dirichlet(1.0) [over=State, iid_over=State]\n"
        f"{start}"
        "    sample mu : State <- Normal([3.0, 10.0], 1.0)\n"
        f"    marginalize z : State <- MarkovChain({args}) [over=Time]\n"
        "        observe y : Time <- Normal(mu[z], 1.0)\n"
        "    return mu\n\n"
        "export hidden\n"
    )


def observed(steps: int) -> str:
    """The chain itself observed: its log density is its path's."""
    return (
        f"object State : FinSet 2\nobject Time : FinSet {steps}\n\n"
        "program observed : Time -> Time\n"
        "    sample theta <- Dirichlet(1.0) [over=State, iid_over=State]\n"
        "    observe z : Time <- MarkovChain(theta)\n"
        "    return theta\n\n"
        "export observed\n"
    )


def latent(steps: int) -> str:
    """The chain as a `sample` without data: NUTS and SVI cannot draw its path back."""
    return observed(steps).replace("observe z", "sample z")
