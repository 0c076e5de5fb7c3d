"""Fuzzers for `qvr run`: generated model programs and data files (issue #24).

`generators` makes the cases (programs from the registry and grammar-shaped
templates, mutations of real files, data files of every format, right and
wrong); `driver` runs each one through the command line's own entry in a
worker process under a timeout and sorts the outcome into ok, clean refusal
or failure. `bench/fuzz_runs.py` runs a thousand; `test_fuzz_runs.py` a slice.
"""
