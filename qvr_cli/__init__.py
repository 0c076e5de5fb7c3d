"""qvr_cli: the `qvr` command line.

It sits above both `qvr_core` and `qvr_lsp` (the only package allowed to
import both), so every subcommand is imported by name in the code, never by
a string: one that fails to import fails `qvr` at once.
"""
