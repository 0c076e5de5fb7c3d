#!/usr/bin/env bash
# Installs code-server 4.100.3 (VS Code 1.100.3, the last release that runs on
# Node 20) into a cache, from the package registries alone: its own install
# steps would download ripgrep and prebuilt binaries from GitHub, so they are
# done here by hand. Idempotent: a finished install leaves a stamp.
#   scripts/vscode_e2e/install_code_server.sh DIR
# Needs Debian's ripgrep, libkrb5-dev, g++ and make (./dev installs them).
set -euo pipefail
VERSION=4.100.3
DIR=${1:?usage: install_code_server.sh DIR}
STAMP="$DIR/.installed-$VERSION"
[ -f "$STAMP" ] && exit 0

echo "== installing code-server $VERSION into $DIR (once; a few minutes)"
rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR"
export npm_config_unsafe_perm=true   # its scripts refuse to run as root without it
export npm_config_yes=true           # node-pty's install script runs `npx node-gyp`
export npm_config_nodedir=${npm_config_nodedir:-/usr}  # build against the installed Node headers
LOG="$DIR/install.log"
echo '{"name":"qvr-code-server","private":true}' > package.json
# --ignore-scripts: code-server's postinstall would fetch from GitHub; its steps follow.
npm install --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error "code-server@$VERSION" >>"$LOG" 2>&1

# argon2 (imported at start-up) from source instead of a prebuilt download.
(cd node_modules/argon2 && ../.bin/node-pre-gyp install --build-from-source >>"$LOG" 2>&1)

VS="$DIR/node_modules/code-server/lib/vscode"
cd "$VS"
npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >>"$LOG" 2>&1
# @vscode/ripgrep skips its download when bin/ exists: use Debian's rg.
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
# Native modules (node-pty, spdlog, kerberos, ...) built from source.
npm rebuild --foreground-scripts >>"$LOG" 2>&1 || { tail -40 "$LOG"; exit 1; }
rm -rf node_modules.asar && ln -s node_modules node_modules.asar
(cd bin/remote-cli && ln -sf code-linux.sh code-server)
(cd bin/helpers && ln -sf browser-linux.sh browser.sh)
(cd extensions && npm install --omit=dev --no-audit --no-fund --loglevel=error >>"$LOG" 2>&1)

"$DIR/node_modules/.bin/code-server" --version >/dev/null
touch "$STAMP"
echo "== code-server $VERSION installed ($(du -sh "$DIR" | cut -f1))"
