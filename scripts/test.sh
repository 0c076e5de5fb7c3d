#!/usr/bin/env bash
# The whole test suite; run through `./dev test`, which sets up the
# environment first (.venv, npm packages, Debian packages).
#
#   ./dev test          everything CI runs (goal: under 20 minutes on 2 cores)
#   ./dev test --fast   the inner loop (under 5 minutes): lint, types and the Python tests
#                       that do not sample, run whole fits or run exports in their targets
#   ./dev test --fast tests/inference
#                       lint, types and the tests of those paths but the slow ones
#
# Any further arguments go to every pytest run.
set -euo pipefail
cd "$(dirname "$0")/.."

FAST=0
if [ "${1:-}" = --fast ]; then
    FAST=1
    shift
fi

# Unformatted Python fails the tests (`ruff format .` fixes it);
# QVR_FORMAT_CHECK=0 skips the check while a branch is being merged.
FORMAT_CHECK="${QVR_FORMAT_CHECK:-1}"
# pytest runs in a worker per core (pytest-xdist), two at most: the tests start
# processes of their own (language servers, chains, Stan's compiler).
WORKERS="${QVR_TEST_WORKERS:-$(python -c 'import os; print(max(1, min(2, len(os.sched_getaffinity(0)))))')}"
# A test file's tests stay in one worker (its module fixtures are made once).
PYTEST=(pytest -q -p no:cacheprovider)
PARALLEL=("${PYTEST[@]}" -n "$WORKERS" --dist loadfile)

echo "== ruff"
ruff check .
if [ "$FORMAT_CHECK" = 1 ]; then
    echo "== ruff format --check"
    ruff format --check .
fi

echo "== types (mypy, settings in pyproject.toml)"
mypy

echo "== layers (lint-imports, contracts in pyproject.toml)"
lint-imports --no-cache

if [ "$FAST" = 1 ]; then
    if [ $# -gt 0 ]; then  # the tests asked for, but the slow ones
        echo "== python tests, fast: $* but the slow ones ($WORKERS workers)"
        "${PARALLEL[@]}" -m "not slow and not alone" --durations=10 "$@"
        exit 0
    fi
    # The quick set: the tests that neither sample (the AVX2 pass's set), run whole fits
    # through the server or the command line (lsp_commands, security, resources), build
    # packages, nor run exports in their targets.
    echo "== python tests, fast: no sampling, no whole runs, no exports run ($WORKERS workers)"
    "${PARALLEL[@]}" -m "not slow and not alone and not sampling" \
        --ignore=tests/export/test_numpyro.py --ignore=tests/export/test_pymc.py \
        --ignore=tests/export/test_stan.py --ignore=tests/packaging \
        --ignore=tests/lsp_commands --ignore=tests/security --ignore=tests/resources \
        --durations=10
    exit 0
fi

echo "== python tests ($WORKERS workers)"
# the 30 slowest tests are listed, so the suite's time (goal: ./dev test under 20 minutes) is watched
"${PARALLEL[@]}" -m "not alone" --durations=30 "$@"

echo "== python tests that must run alone"
# exit 5: no test selected (a path given that holds none of them)
"${PYTEST[@]}" -m alone "$@" || [ $? = 5 ]

# The extension's tests and the real VS Code spend much of their time waiting (for
# Chromium, for the language server, for a wheel to install), so they run beside the
# AVX2 pass rather than after it; their output is printed whole once both are done.
node_tests() {
    echo "== VS Code extension tests"
    (cd vscode-extension && npm test)
    echo "== the extension in a real VS Code (code-server, headless Chromium)"
    bash scripts/vscode_e2e/run.sh
}
NODE_PID=""
if [ -f vscode-extension/package.json ]; then
    NODE_LOG=$(mktemp "${TMPDIR:-/tmp}/qvr-node-tests.XXXXXX")
    node_tests >"$NODE_LOG" 2>&1 &
    NODE_PID=$!
fi

echo "== sampling tests again, with torch's AVX2 kernels (ATEN_CPU_CAPABILITY=avx2)"
# Another CPU rounds the last bits differently, and a NUTS trajectory turns that into
# other draws: a test that holds only for this CPU's draws fails here, not on the next
# machine. (On a CPU without AVX-512 this run repeats the first one's kernels.)
AVX2=0
ATEN_CPU_CAPABILITY=avx2 "${PARALLEL[@]}" -m "sampling and not alone and not slow" "$@" \
    || AVX2=$?
[ "$AVX2" = 5 ] && AVX2=0

NODE=0
if [ -n "$NODE_PID" ]; then
    wait "$NODE_PID" || NODE=$?
    cat "$NODE_LOG"
    rm -f "$NODE_LOG"
    [ "$NODE" = 0 ] || echo "== the extension's tests failed (exit $NODE)"
fi
[ "$AVX2" = 0 ] || echo "== the AVX2 pass failed (exit $AVX2)"
[ "$AVX2" = 0 ] && [ "$NODE" = 0 ]
