"""Small regressions in QVR that several test files read: the checker's, the runtime's,
the command line's and the exporters' tests of one construct see the same program."""

from __future__ import annotations


def _program(name: str, rows: int, steps: str, objects: str = "") -> str:
    return (
        f"{objects}object Row : FinSet {rows}\n\n"
        f"program {name} : Row -> Row\n"
        f"{steps}"
        "    return mu\n\n"
        f"export {name}\n"
    )


def kid(rows: int) -> str:
    """A line in mom_iq through a coefficient vector read by literal indices."""
    return _program(
        "kid",
        rows,
        "    sample beta : Coef <- Normal(0.0, 10.0)\n"
        "    sample sigma <- HalfNormal(5.0)\n"
        "    let mu = beta[0] + beta[1] * mom_iq\n"
        "    observe kid_score : Row <- Normal(mu, sigma)\n",
        "object Coef : FinSet 2\n",
    )


def earnings(rows: int) -> str:
    """log(earn), computed from the data, observed on a line in height."""
    return _program(
        "earnings",
        rows,
        "    sample beta : Coef <- Normal(0.0, 10.0)\n"
        "    sample sigma <- HalfNormal(5.0)\n"
        "    let log_earn = log(earn)\n"
        "    let mu = beta[0] + beta[1] * height\n"
        "    observe log_earn : Row <- Normal(mu, sigma)\n",
        "object Coef : FinSet 2\n",
    )


def flat_line(rows: int) -> str:
    """Stan's line with no prior statements: flat intercept and slope, a flat scale."""
    return _program(
        "regression",
        rows,
        "    sample a <- Flat\n"
        "    sample b <- Flat\n"
        "    sample sigma <- HalfFlat\n"
        "    let mu = a + b * x\n"
        "    observe y : Row <- Normal(mu, sigma)\n",
    )


GROUP = "object Group : FinSet 3\n"
COEF5 = "object Coef : FinSet 5\n"


def _flat_groups_steps(mean: str) -> str:
    return (
        "    sample alpha : Group <- Flat\n"
        "    sample b <- Flat\n"
        "    sample tau <- HalfFlat\n"
        f"    let {mean} = alpha[g] + b * x\n"
        f"    observe y : Row <- Normal({mean}, tau)\n"
    )


def _earnings_interaction_steps() -> str:
    return (
        "    sample beta : Coef <- Normal(0.0, 10.0)\n"
        "    sample sigma <- HalfNormal(5.0)\n"
        "    let log_earn = log(earn)\n"
        "    let inter = height * male\n"
        "    let tall = height > 65.0\n"
        "    let mu = beta[0] + beta[1] * height + beta[2] * male + beta[3] * inter"
        " + beta[4] * tall\n"
        "    observe log_earn : Row <- Normal(mu, sigma)\n"
    )


def flat_groups(rows: int) -> str:
    """Flat group intercepts (a plate of them), a flat slope and a flat scale."""
    return _program("grouped", rows, _flat_groups_steps("mu"), GROUP)


def earnings_interaction(rows: int) -> str:
    """posteriordb's earnings-logearn_interaction in small: literal indices and lets of
    the data (a log, a product, a comparison) that Stan computes in `transformed data`."""
    return _program("earnings", rows, _earnings_interaction_steps(), COEF5)


def flat_groups_and_earnings(rows: int) -> str:
    """Both of the above in one program (one Stan compile for both exports' tests)."""
    steps = _flat_groups_steps("nu") + _earnings_interaction_steps()
    return _program("both", rows, steps, GROUP + COEF5)
