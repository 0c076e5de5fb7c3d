#!/usr/bin/env bash
# The whole test suite; run through `./dev test`, which sets up the
# environment first (.venv, npm packages, Debian packages).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== ruff"
ruff check .

echo "== python tests"
pytest -q -p no:cacheprovider "$@"

if [ -f vscode-extension/package.json ]; then
    echo "== VS Code extension tests"
    (cd vscode-extension && npm test)
fi

if [ -f vscode-extension/package.json ]; then
    echo "== the extension in a real VS Code (code-server, headless Chromium)"
    bash scripts/vscode_e2e/run.sh
fi
