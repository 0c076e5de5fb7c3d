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
# From a copy of the checkout's files (tracked, or new and not ignored): building writes
# qvr.egg-info into its source, and ./dev test runs this beside the Python tests, whose
# tests/packaging builds from the checkout itself. Through the sdist, so nothing is built
# inside the copy either; --no-isolation: the build backend comes from the venv.
SOURCE="$WHEELS/source"
mkdir "$SOURCE"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard \
        | while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done \
        | xargs -0 cp --parents -t "$SOURCE"
else  # not a git checkout: the tree as it is
    cp -r . "$SOURCE"
fi
"$PYTHON" -m build --no-isolation --outdir "$WHEELS" "$SOURCE" >"$WHEELS/build.log" 2>&1 || {
    cat "$WHEELS/build.log" >&2
    exit 1
}
QVR_E2E_WHEEL=$(ls "$WHEELS"/qvr-*.whl)
export QVR_E2E_WHEEL

cd vscode-extension
npm run --silent package >/dev/null
rm -rf "$QVR_E2E_SHOTS"
npm run --silent e2e
