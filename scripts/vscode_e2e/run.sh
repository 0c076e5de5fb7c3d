#!/usr/bin/env bash
# The end-to-end test in a real VS Code: package the extension, then drive
# code-server (installed by ./dev into the cache) with headless Chromium.
# Screenshots go to $QVR_E2E_SHOTS (default vscode-extension/out/e2e-screenshots).
set -euo pipefail
cd "$(dirname "$0")/../.."
export QVR_CODE_SERVER=${QVR_CODE_SERVER:-${XDG_CACHE_HOME:-$HOME/.cache}/qvr/code-server-4.100.3}
export QVR_E2E_SHOTS=${QVR_E2E_SHOTS:-$PWD/vscode-extension/out/e2e-screenshots}
bash scripts/vscode_e2e/install_code_server.sh "$QVR_CODE_SERVER"
cd vscode-extension
npm run --silent package >/dev/null
rm -rf "$QVR_E2E_SHOTS"
npm run --silent e2e
