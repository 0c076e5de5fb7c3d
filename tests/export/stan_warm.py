"""Compile the six exported Stan programs ahead of tests/export/test_stan.py.

PyStan compiles each program with g++ (a minute or more on two cores) and keeps the
result in httpstan's on-disk cache (~/.cache/httpstan), where a later `stan.build`
of the same code finds it in a second. `main()` builds them all; the session's
background process (tests/export/background.py) calls it while the rest of the
suite runs on the other core.

Two processes must not build the same program at once: httpstan compiles into one
directory per program and deletes it before it starts. So every build here and in
the tests goes through `build()`, which holds a file lock per program: a test that
needs a program the background process is compiling waits for it and then finds it
cached. The operating system drops the lock of a process that dies, so a background
build that crashes or is killed only leaves the test to compile the program itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


def unavailable() -> str | None:
    """Why the Stan programs cannot be built here, or None when they can."""
    if shutil.which("g++") is None:
        return "g++ is not installed (PyStan compiles each program with it)"
    try:
        import stan  # noqa: F401
    except Exception as e:  # an import that fails for any reason means no Stan here
        return f"PyStan 3 does not import: {e}"
    return None


@contextlib.contextmanager
def build_lock(code: str) -> Iterator[None]:
    """Held while this process builds `code` (see the module docstring)."""
    import httpstan.cache
    import httpstan.models

    model = httpstan.models.calculate_model_name(code).rsplit("/", 1)[-1]
    locks = httpstan.cache.cache_directory() / "qvr-build-locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"{model}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: httpstan 4.13's compiler flags for a program, and `-g0`: setuptools adds Python's own
#: `-g`, and the debugging information of Stan's templates is a third of the build (34 s
#: against 22 s for one program on two idle cores) and 11 MB of the 40 MB module. The
#: machine code is the same, so a bench that finds such a build in the cache measures
#: what httpstan's own build would give.
COMPILE_ARGS = ["-O3", "-std=c++14", "-Wno-sign-compare", "-g0"]


def _without_debug_information() -> None:
    """Make httpstan build every program with `COMPILE_ARGS` in this process (PyStan runs
    httpstan's server in the calling process, which looks the builder up on each build)."""
    import httpstan.models

    builder = httpstan.models.build_services_extension_module
    if getattr(builder, "qvr_compile_args", None) is not None:
        return

    async def build_without_debug_information(
        program_code: str, extra_compile_args: list[str] | None = None
    ) -> str:
        return await builder(program_code, extra_compile_args or COMPILE_ARGS)

    build_without_debug_information.qvr_compile_args = COMPILE_ARGS  # type: ignore[attr-defined]
    httpstan.models.build_services_extension_module = build_without_debug_information


def build(code: str, data: Mapping[str, Any], random_seed: int = 1) -> Any:
    """`stan.build`, one process at a time per program. A cache entry without the
    compiler's log, which httpstan writes last, is a build that died half way (its
    extension module may be half written): it is removed and the program built afresh."""
    import httpstan.cache
    import httpstan.models
    import stan

    _without_debug_information()

    scratch = Path(tempfile.gettempdir()) / f"qvr-stan-build-{os.getuid()}"
    scratch.mkdir(exist_ok=True)
    # httpstan compiles into ./build of the working directory: not into the checkout
    with build_lock(code), contextlib.chdir(scratch):
        model = httpstan.models.calculate_model_name(code)
        directory = httpstan.cache.model_directory(model)
        if directory.exists() and not (directory / "stderr.log").exists():
            httpstan.cache.delete_model_directory(model)
        return stan.build(code, data=dict(data), random_seed=random_seed)


def programs() -> dict[str, str]:
    """Each example's exported Stan program, by example name."""
    from qvr_core.export import TARGETS, export_program
    from tests.export.reference import MODELS, checked, program

    out = {}
    for name in MODELS:
        exported = export_program(checked(name), TARGETS["stan"], program(name))
        if exported.text is not None:
            out[name] = exported.text
    return out


def main() -> None:
    os.nice(19)  # the suite keeps its core; g++ inherits this
    from tests.export.reference import data

    for name, code in programs().items():
        with contextlib.suppress(Exception):  # a failed build is the test's to report
            build(code, data(name))


if __name__ == "__main__":
    main()
