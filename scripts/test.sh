#!/usr/bin/env bash
# The whole test suite; run through `./dev test`, which sets up the
# environment first (.venv, npm packages, Debian packages).
set -euo pipefail
cd "$(dirname "$0")/.."

# Unformatted Python fails the tests (`ruff format .` fixes it);
# QVR_FORMAT_CHECK=0 skips the check while a branch is being merged.
FORMAT_CHECK="${QVR_FORMAT_CHECK:-1}"

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

echo "== python tests"
# the 30 slowest tests are listed, so the suite's time (goal: ./dev test under 30 minutes) is watched
pytest -q -p no:cacheprovider --durations=30 "$@"

if [ -f vscode-extension/package.json ]; then
    echo "== VS Code extension tests"
    (cd vscode-extension && npm test)
fi

if [ -f vscode-extension/package.json ]; then
    echo "== the extension in a real VS Code (code-server, headless Chromium)"
    bash scripts/vscode_e2e/run.sh
fi
