"""XLA's compiled programs kept on disk between runs of the NumPyro and PyMC tests.

Their NUTS runs (NumPyro's, and PyMC's through NumPyro) spend most of their time in
XLA compiling the sampler for each model: NumPyro's run of the HMM took 15 to 24 s on
two cores, 16 to 20 s of it compiling, and 4.7 s with this cache filled (the six
models' NumPyro runs 58 s, then 21 s). JAX's persistent compilation cache
keeps each compiled executable under a key of the program, the compile options and
JAX's version, and gives back the same executable, so the draws are the same as
without it: it only saves time, as httpstan's cache of the Stan tests' builds does.
The directory is named by the JAX and jaxlib versions and this machine's CPU, so a
cache carried to another CPU or JAX is not read (JAX's own check refuses an executable
built for CPU features the host lacks, and says so; this keeps that from coming up).

`QVR_TEST_JAX_CACHE=0` turns it off; `QVR_TEST_JAX_CACHE=DIR` puts it under DIR.
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path


def _machine() -> str:
    """The CPU (model and instruction set) that XLA compiles for, in a few characters."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    wanted = [line for line in lines if line.startswith(("flags", "model name"))][:2]
    described = "\n".join([platform.machine(), platform.processor(), *wanted])
    return hashlib.sha256(described.encode()).hexdigest()[:12]


def enable() -> None:
    """Point JAX at the cache; call before anything is compiled (at a test module's
    import: collection imports every module before any test runs). Never raises."""
    setting = os.environ.get("QVR_TEST_JAX_CACHE", "1")
    if setting == "0":
        return
    try:
        import jax
        import jaxlib
    except ImportError:  # the tests that need JAX skip themselves
        return
    base = (
        Path(setting)
        if setting != "1"
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "qvr"
    )
    directory = base / f"jax-{jax.__version__}-{jaxlib.__version__}-{_machine()}"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    jax.config.update("jax_compilation_cache_dir", str(directory))
    # every program, not only those over a second: a run compiles a hundred small ones
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    # No size limit: with one, JAX reads every entry's access time on each write (a
    # NumPyro test file's runs then spent 15 s more in the kernel). An entry another
    # process is still writing fails to decompress, and JAX compiles that program.
