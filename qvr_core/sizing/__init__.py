"""What a run of a program will need in memory, from the checker's output alone: a seed
program's (`resources`), a model program's (`model_resources`), and QVR601 for an
exported program over the memory budget (`too_large`).

A layer above the checker: the checker never imports it. `too_large` is a late pass
the checker runs when it found no error (`qvr_core.check.passes.late_passes`);
`qvr_core/__init__.py`, the core's composition root, adds it.
"""
