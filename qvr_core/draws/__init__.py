"""A run's draws outside torch: ArviZ's `InferenceData` from a run's groups, for every
ArviZ this project supports (`inference_data`), and a long series thinned for display
(`series`).

Below the runtime, so the language server can read and draw runs without torch.
"""
