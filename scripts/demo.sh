#!/usr/bin/env bash
# The demo, through the real core: check every example, show a dimension
# error, draw the bidirectional model, fit the vanilla RNN language model
# with SVI, and sample a linear regression's posterior with four NUTS chains
# in parallel until they converge (the summary table with R-hat and ESS).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${QVR_DEMO_OUT:-$(mktemp -d)}"

echo "== qvr check examples/*.qvr   (the bidirectional seed's by-dimension match is a hint)"
qvr check examples/*.qvr

echo
echo "== qvr check examples/errors/QVR201_dimension_mismatch.qvr   (exits 1: a dimension error)"
if qvr check examples/errors/QVR201_dimension_mismatch.qvr; then
    echo "expected a dimension error" >&2
    exit 1
fi

echo
echo "== qvr diagram examples/bidirectional_rnn_lm.qvr --format mermaid"
qvr diagram examples/bidirectional_rnn_lm.qvr --format mermaid
qvr diagram examples/bidirectional_rnn_lm.qvr --format svg -o "$out/bidirectional_rnn_lm.svg"
echo "(SVG rendered by Graphviz: $out/bidirectional_rnn_lm.svg)"

echo
echo "== qvr run examples/vanilla_rnn_lm.qvr --method svi --steps 200"
qvr run examples/vanilla_rnn_lm.qvr --method svi --steps 200 --seed 0

echo
echo "== qvr run examples/linear_regression.qvr --method nuts --steps 400   (4 chains x (200 warmup, 200 draws), in parallel)"
qvr run examples/linear_regression.qvr --method nuts --steps 400 --seed 0 --output "$out/linear_regression.nc"
echo "(draws as ArviZ InferenceData: $out/linear_regression.nc)"
