"""Model programs whose size is in their plates and `marginalize` scopes (issue #24's
repros), shared by the tests and `bench/resources.py`."""

from __future__ import annotations

#: A plate of `size` entries that one observe runs over.
PLATE = """\
object N : FinSet {size}

program big : N -> N
    sample mu <- Normal(0.0, 1.0)
    sample theta : N <- Normal(mu, 1.0)
    observe y : N <- Normal(theta, 1.0)
    return mu

export big
"""

#: One observe reading a plate of a billion entries.
BILLION = """\
object N : FinSet 1000000000

program big : N -> N
    sample mu <- Normal(0.0, 1.0)
    observe y : N <- Normal(mu, 1.0)
    return mu

export big
"""

#: A coordinate with ten million values summed out: a Categorical over a FinSet.
WIDE_CATEGORICAL = """\
object K : FinSet 10000000
object Point : FinSet 10

program wide : Point -> Point
    sample w <- Dirichlet(1.0) [over=K]
    sample mu : K <- Normal(0.0, 1.0)
    marginalize z : K <- Categorical(w) [over=Point]
        observe y : Point <- Normal(mu[z], 1.0)
    return w

export wide
"""

#: The same count of values with nothing else large: a Binomial's support.
WIDE_BINOMIAL = """\
object P : FinSet 10

program wide : P -> P
    sample mu <- Normal(0.0, 1.0)
    marginalize n <- Binomial({count}, 0.5)
        observe y : P <- Normal(mu, 1.0)
    return mu

export wide
"""


def nested(depth: int, values: int = 2, points: int = 10, read_all: bool = True) -> str:
    """`depth` nested `marginalize` scopes of `values` values each over `points` groups,
    and one observe at the bottom that reads every coordinate (`read_all`: its scope's
    body then runs values ** depth times) or only the innermost (values * values)."""
    lines = [
        f"object K : FinSet {values}",
        f"object P : FinSet {points}",
        "",
        "program deep : P -> P",
        "    sample w <- Dirichlet(1.0) [over=K]",
        "    sample mu : K <- Normal(0.0, 1.0)",
    ]
    for i in range(depth):
        lines.append("    " * (i + 1) + f"marginalize z{i} : K <- Categorical(w) [over=P]")
    inner = "    " * (depth + 1)
    read = range(depth) if read_all else [depth - 1]
    lines.append(inner + "let m = " + " + ".join(f"mu[z{i}]" for i in read))
    lines.append(inner + "observe y : P <- Normal(m, 1.0)")
    lines += ["    return w", "", "export deep"]
    return "\n".join(lines) + "\n"


#: A template with a scope of its own, called inside a scope whose inner scope reads the
#: outer coordinate through a `let`: each scope's runs as the runtime reuses its sums.
TEMPLATE_IN_SCOPE = """\
object K : FinSet 3
object G : FinSet 4
object P : FinSet 5

program mix (A : FinSet, s : Real) : A -> A
    sample w <- Dirichlet(1.0) [over=K]
    sample mu : K <- Normal(0.0, s)
    marginalize c : K <- Categorical(w) [over=A]
        observe q : A <- Normal(mu[c], 1.0)
    return mu

program outer : P -> P
    sample w2 <- Dirichlet(1.0) [over=K]
    sample nu : K <- Normal(0.0, 1.0)
    marginalize z : K <- Categorical(w2)
        let m = nu[z] * 2.0
        marginalize y : K <- Categorical(w2)
            let m2 = m + nu[y]
            observe o : P <- Normal(m2, 1.0)
        sample v <- mix(G, 2.0)
    return nu

export outer
"""
