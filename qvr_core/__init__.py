"""qvr_core: parse, check, draw and run QVR probabilistic programs.

Importing this package (and `check`, `graph`, `syntax`) never imports torch;
only `runtime`, `inference` and `dsl` do, when they are used.
"""

from importlib.metadata import PackageNotFoundError, version

try:  # pyproject.toml is the one place the version is written
    __version__ = version("qvr")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
