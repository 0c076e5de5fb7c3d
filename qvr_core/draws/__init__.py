"""A run's draws outside torch: ArviZ's `InferenceData` from a run's groups, for every
ArviZ this project supports (`inference_data`), and a long series thinned for display
(`series`); every use of ArviZ, behind one adapter (`arviz_adapter`), so that ArviZ 1.x
is one change in one file.

Below the runtime, so the language server can read and draw runs without torch.
"""
