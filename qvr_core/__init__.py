"""qvr_core: parse, check, draw and run QVR probabilistic programs.

Importing this package (and `check`, `graph`, `syntax`) never imports torch;
only `runtime`, `inference` and `dsl` do, when they are used.
"""

__version__ = "0.1.0"
