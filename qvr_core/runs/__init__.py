"""Runs of QVR programs: from source to a typed summary, for `qvr run`, the language
server's worker, `fit` and `qvr_core.dsl`.

One job per module, in the order a run goes:

- `prepare`: check the source, pick the program (`qvr_core.plan.runnable`), read
  and validate the data (`data`, and `model_data` for a model program's data
  by name), size the run against the memory budget (`sizing`), compile;
- `methods`: SVI, NUTS or prior draws over the prepared program, with the
  algorithms of `qvr_core.inference`;
- `attention_record`: after the method, each attention's weights for the first
  example (what the editor's run view draws);
- `summary`: `RunSummary`, what a run produced, and its JSON form;
- `run`: `run_program` (prepare, then execute) and `run_inference` (its JSON
  form); `fit`: `fit(source, ...)`, a run with its draws kept.
"""

from qvr_core.runs.fit import Fit, fit
from qvr_core.runs.run import run_inference, run_program
from qvr_core.runs.summary import RunSummary

__all__ = ["Fit", "RunSummary", "fit", "run_inference", "run_program"]
