#!/usr/bin/env bash
# The end-to-end test in a real VS Code: package the extension, build a wheel of this
# checkout, then drive code-server (installed by ./dev into the cache) with headless
# Chromium. The extension installs its language server from that wheel itself, as a
# user's would from PyPI; PyTorch is pinned by constraints.txt.
# Screenshots go to $QVR_E2E_SHOTS (default vscode-extension/out/e2e-screenshots).
set -euo pipefail
cd "$(dirname "$0")/../.."
export QVR_CODE_SERVER=${QVR_CODE_SERVER:-${XDG_CACHE_HOME:-$HOME/.cache}/qvr/code-server-4.100.3}
export QVR_E2E_SHOTS=${QVR_E2E_SHOTS:-$PWD/vscode-extension/out/e2e-screenshots}
export QVR_E2E_CONSTRAINTS=$PWD/constraints.txt
PYTHON=${QVR_PYTHON:-$PWD/.venv/bin/python}
bash scripts/vscode_e2e/install_code_server.sh "$QVR_CODE_SERVER"

WHEELS=$(mktemp -d "${TMPDIR:-/tmp}/qvr-e2e-wheel.XXXXXX")
trap 'rm -rf "$WHEELS"' EXIT
# Through the sdist, so nothing is built inside the checkout (a wheel built straight from
# the tree leaves build/ behind); --no-isolation: the build backend comes from the venv.
"$PYTHON" -m build --no-isolation --outdir "$WHEELS" . >"$WHEELS/build.log" 2>&1 || {
    cat "$WHEELS/build.log" >&2
    exit 1
}
QVR_E2E_WHEEL=$(ls "$WHEELS"/qvr-*.whl)
export QVR_E2E_WHEEL

cd vscode-extension
npm run --silent package >/dev/null
rm -rf "$QVR_E2E_SHOTS"
npm run --silent e2e
