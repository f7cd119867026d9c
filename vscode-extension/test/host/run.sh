#!/usr/bin/env bash
# The .vsix in a real VS Code host, offline: code-server 4.100.3 (the VS Code 1.100.3 server,
# from the npm registry) installs the package with its own CLI, then headless Chromium
# (Debian's) opens a .dragon file in the workbench and drive.mjs checks that the extension
# activates, shows its status item, starts dragon-lsp and receives diagnostics.
#
#   bash vscode-extension/test/host/run.sh [VSIX]     (default: vscode-extension/little-dragon.vsix)
#   bash vscode-extension/test/host/run.sh --install-only   (the step that uses the network)
#
# Needs: Chromium (`apt-get install -y chromium`, or CHROMIUM=path), a C++ toolchain and the
# Node.js headers (`<node prefix>/include/node`) for code-server's native modules.
# What it downloads, once, into test/host/node_modules: npm registry packages only.
# code-server's own postinstall would run `npm install` with scripts (ripgrep's downloads a
# binary from GitHub, kerberos needs libkrb5-dev): instead every install here runs with
# --ignore-scripts and the few native modules code-server needs to start are built locally
# with node-gyp against the local headers. File search (ripgrep) and Kerberos proxy
# authentication are left out; neither is needed to open a file or run an extension.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
EXT="$(cd "$HERE/../.." && pwd)"
REPO="$(cd "$EXT/.." && pwd)"
PY="${DRAGON_PYTHON:-$REPO/.venv/bin/python}"
INSTALL_ONLY=0
if [ "${1:-}" = "--install-only" ]; then INSTALL_ONLY=1; shift; fi
VSIX="$(realpath "${1:-$EXT/little-dragon.vsix}")"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
NODE_PREFIX="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
GYP="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"

[ "$INSTALL_ONLY" = 1 ] || [ -f "$VSIX" ] || { echo "run.sh: no $VSIX (npm run package first)"; exit 1; }
[ "$INSTALL_ONLY" = 1 ] || [ -x "$CHROMIUM" ] || { echo "run.sh: no Chromium at $CHROMIUM (apt-get install -y chromium, or set CHROMIUM)"; exit 1; }
[ -f "$NODE_PREFIX/include/node/node_api.h" ] || { echo "run.sh: no Node.js headers in $NODE_PREFIX/include/node"; exit 1; }

CS="$HERE/node_modules/code-server"
VS="$CS/lib/vscode"
if [ ! -f "$HERE/node_modules/.dragon-host-ready" ]; then
  echo "run.sh: installing code-server (npm registry only, no install scripts)"
  (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund)
  (cd "$VS" && npm install --omit=dev --ignore-scripts --no-audit --no-fund)
  (cd "$VS/extensions" && npm install --omit=dev --ignore-scripts --no-audit --no-fund)
  build() { (cd "$1" && shift && node "$GYP" rebuild --nodedir="$NODE_PREFIX" -j 2 "$@" > build.log 2>&1) || { cat "$1/build.log"; exit 1; }; }
  echo "run.sh: building native modules with node-gyp against $NODE_PREFIX/include/node"
  build "$HERE/node_modules/argon2" --module_name=argon2 --module_path="$HERE/node_modules/argon2/lib/binding/napi-v3" --napi_build_version=3
  for m in @vscode/spdlog native-watchdog node-pty; do build "$VS/node_modules/$m"; done
  # What code-server's postinstall.sh does besides installing.
  ln -sfn node_modules "$VS/node_modules.asar"
  ln -sfn code-linux.sh "$VS/bin/remote-cli/code-server"
  ln -sfn browser-linux.sh "$VS/bin/helpers/browser.sh"
  touch "$HERE/node_modules/.dragon-host-ready"
fi
[ "$INSTALL_ONLY" = 0 ] || exit 0

WORK="$(mktemp -d)"
CSPID=""
cleanup() {
  # code-server was started in its own process group: end it with its extension host and server.
  if [ -n "$CSPID" ]; then kill -- "-$CSPID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/ws/.vscode" "$WORK/data/User" "$WORK/extensions"
cat > "$WORK/data/User/settings.json" <<'JSON'
{ "security.workspace.trust.enabled": false, "workbench.startupEditor": "none", "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false, "extensions.autoUpdate": false }
JSON
printf '{ "dragon.pythonPath": %s }\n' "$(node -p 'JSON.stringify(process.argv[1])' "$PY")" > "$WORK/ws/.vscode/settings.json"
cat > "$WORK/ws/example.dragon" <<'DRAGON'
# matmul on an H100: two-level tiling, shared-memory staging
workload "matmul_1024.tvmscript"
target "nvidia/nvidia-h100"

b0 = get_sblock("C")
l1, l2, l3 = get_loops(b0)
v4, v5, v6 = sample_perfect_tile(l1, n=3, max_innermost_factor=64, decision=[16, 8, 8])
l7, l8, l9 = split(l1, [v4, v5, v6])
bind(l7, "blockIdx.x")
b10 = cache_read(b0, 0, "shared", consumer_blocks=[b0])
l13, l14 = split(b0, [None, 32])
DRAGON

node "$CS/out/node/entry.js" --user-data-dir "$WORK/data" --extensions-dir "$WORK/extensions" --install-extension "$VSIX" | tee "$WORK/install.log"
grep -q "was successfully installed" "$WORK/install.log" || { echo "run.sh: code-server did not install $VSIX"; exit 1; }

PORT="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
setsid node "$CS/out/node/entry.js" --auth none --bind-addr "127.0.0.1:$PORT" --disable-telemetry --disable-update-check \
  --disable-workspace-trust --user-data-dir "$WORK/data" --extensions-dir "$WORK/extensions" "$WORK/ws" > "$WORK/server.log" 2>&1 &
CSPID=$!
node -e 'const p=+process.argv[1];const t=Date.now();(function f(){require("net").connect(p,"127.0.0.1").on("connect",()=>process.exit(0)).on("error",()=>Date.now()-t>30000?process.exit(1):setTimeout(f,200))})()' "$PORT" \
  || { cat "$WORK/server.log"; exit 1; }

EXPECT=0
if "$PY" -m dragon_lsp --help > /dev/null 2>&1; then EXPECT=1; else echo "run.sh: $PY -m dragon_lsp --help fails: not expecting diagnostics"; fi
node "$HERE/drive.mjs" "http://127.0.0.1:$PORT/?folder=$WORK/ws" "$WORK/data/logs" "$EXT/out/host" "$EXPECT" || { tail -20 "$WORK/server.log"; exit 1; }
