#!/usr/bin/env bash
# The demo: check every example, draw the bidirectional model, fit the
# vanilla RNN language model with SVI, all through the real core.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== qvr check examples/*.qvr (the seed's by-dimension match is a hint)"
qvr check examples/*.qvr || true
echo
echo "== qvr check examples/errors/QVR201_dimension_mismatch.qvr (a dimension error)"
qvr check examples/errors/QVR201_dimension_mismatch.qvr || true
