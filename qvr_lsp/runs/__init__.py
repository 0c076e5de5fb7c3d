"""The runs room: inference in worker processes the server can stop.

`run_inference.py` is the `qvr.runInference` command; `inference_runs.py` keeps one
run per document, each in a worker (`worker.py`, the only part of `qvr_lsp` that
imports torch), from a bounded pool of slots (`worker_slots.py`) with a spare loaded
ahead (`spare_worker.py`), its data read once (`run_data.py`, `datapaths.py`), its
progress sent to the client (`run_progress.py`) and its draws kept for comparison
(`keep_dirs.py`, `kept_runs.py`). It sits beside the features (neither imports the
other) over the analysis and protocol rooms. Importing this package imports none of
its modules: a worker starts as `python -m qvr_lsp.runs.worker`.
"""
