"""After the fit: what a run's InferenceData says about the model, through ArviZ.

- `comparison`: PSIS-LOO and WAIC of one run or several (`az.loo`, `az.waic`,
  `az.compare`), with Pareto-k diagnostics and warnings with remedies; what
  `qvr compare` prints.
- `predictive_checks`: posterior (or prior) predictive checks of each observed
  site, test statistics with Bayesian p-values, and LOO-PIT (`az.loo_pit`) with a
  uniformity measure (`qvr compare --checks`).
- `figures` (with `palette`): ArviZ's figures of a saved run (`qvr plot`).
- `run_files`: a saved run's file sized from its headers (HDF5's metadata, `.npz`
  members' `.npy` headers) before any value is read, and refused over the memory
  budget; what `qvr compare` and `qvr plot` read through.

They read what `qvr run --output` writes (`qvr_core.inference.results`): the
`log_likelihood` group (NUTS and SVI keep it), `posterior_predictive` (with
`--predictive`) and `observed_data`. The package imports nothing itself: each
module imports ArviZ (or matplotlib) when it needs it, never torch. See
docs/after_the_fit.md.
"""
