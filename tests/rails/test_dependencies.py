"""Every dependency is bounded above, or says next to it why not (issue 51).

ArviZ 1.0 (March 2026) removed `InferenceData`, and anyone who installed qvr after it
got a qvr that could not write or read a run: pyproject.toml said `arviz>=0.17` and only
constraints.txt, which users never see, pinned 0.23.4. A requirement here is bounded by a
`<`, `<=`, `==`, `~=` or `===` specifier, or carries `# unbounded: REASON` on its line.
The pins of constraints.txt (what CI tests) must lie inside the ranges users install.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
UPPER = {"<", "<=", "==", "~=", "==="}


def requirements() -> list[tuple[str, str]]:
    """(group, requirement) for the core dependencies and each extra."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    found = [("dependencies", r) for r in project["dependencies"]]
    for extra, listed in project["optional-dependencies"].items():
        found += [(extra, r) for r in listed]
    return found


def bounded(requirement: str) -> bool:
    return any(s.operator in UPPER for s in Requirement(requirement).specifier)


def reason_beside(requirement: str) -> str | None:
    """The `# unbounded: ...` reason on the line that writes `requirement`."""
    for line in PYPROJECT.read_text(encoding="utf-8").splitlines():
        if f'"{requirement}"' in line:
            match = re.search(r"#\s*unbounded:\s*(\S.*)", line)
            if match:
                return match[1]
    return None


@pytest.mark.parametrize(("group", "requirement"), requirements())
def test_a_dependency_is_bounded_or_says_why_not(group: str, requirement: str) -> None:
    assert bounded(requirement) or reason_beside(requirement), (
        f"{group}: {requirement!r} has no upper bound: add one (the next major version, or "
        "the one known to break qvr) or write `# unbounded: WHY` on its line"
    )


def test_the_checks_see_what_they_should() -> None:
    assert bounded("arviz>=0.17,<1") and bounded("x==1.0") and not bounded("arviz>=0.17")
    assert not bounded("jax[cpu]>=0.4") and reason_beside("jax[cpu]>=0.4")
    names = {Requirement(r).name for _, r in requirements()}
    assert {"arviz", "torch", "numpy", "lark", "pygls"} <= names


def test_arviz_1_is_kept_out_everywhere() -> None:
    for group, requirement in requirements():
        parsed = Requirement(requirement)
        if parsed.name == "arviz":
            assert not parsed.specifier.contains(Version("1.0.0")), group


def test_the_ci_pins_lie_inside_what_users_install() -> None:
    pins: dict[str, Version] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip().lower()] = Version(version.strip())
    checked = 0
    for group, requirement in requirements():
        parsed = Requirement(requirement)
        pin = pins.get(parsed.name.lower())
        if pin is not None:
            assert parsed.specifier.contains(pin, prereleases=True), (group, requirement, pin)
            checked += 1
    assert checked >= 10
