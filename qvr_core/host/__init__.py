"""What qvr reads from the machine it runs on: source files (bounded and confined,
`files`), data files and the headers of `.npy` arrays (`datafile`, `npy_headers`),
which optional parts this Python has (`extras`), qvr's own version (`version`), and the
garbage collector it pauses around allocation-heavy work (`collector`).

Below the syntax: it knows nothing of QVR but how to report (`qvr_core.text`).
"""
