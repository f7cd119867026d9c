#!/usr/bin/env bash
# CI for the VS Code extension: install from the lock file, then, without a network, check
# the generated files, type-check, run the highlighting, unit and end-to-end tests, and
# package the .vsix. Exits non-zero on the first failure.
#
#   bash vscode-extension/scripts/ci.sh        (from anywhere; after the project's .venv exists)
#
# DRAGON_PYTHON: the project's interpreter (default: <repo>/.venv/bin/python). It runs the
#   generator check and is the `dragon.pythonPath` of the end-to-end test.
# DRAGON_E2E_REQUIRED=1: fail, instead of skipping, when `python -m dragon_lsp --help` fails.
# DRAGON_HOST_TEST=1: also install the .vsix into code-server and check, in headless Chromium,
#   that it activates and shows the server's diagnostics (test/host/run.sh; needs Debian's
#   chromium, about a minute the first time, 15 s after).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(cd .. && pwd)"
export DRAGON_PYTHON="${DRAGON_PYTHON:-$REPO/.venv/bin/python}"

# The only step that uses the network: packages from the npm registry, as the lock file pins
# them. .npmrc turns install scripts off, so nothing is fetched from anywhere else.
npm ci --no-audit --no-fund

# Everything after this runs with no network at all where the machine allows a private
# network namespace (root on Linux); elsewhere it runs as is.
OFFLINE=()
if command -v unshare >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
  OFFLINE=(unshare -n)
  echo "ci.sh: tests and packaging run without a network (unshare -n)"
fi

"${OFFLINE[@]}" "$DRAGON_PYTHON" scripts/generate.py --check
rm -rf out dist && mkdir -p out
"${OFFLINE[@]}" npm test 2>&1 | tee out/test.log
rm -f little-dragon.vsix
"${OFFLINE[@]}" npm run package

# The package holds the bundle, the manifest and the generated files, and nothing else.
node -e '
const fs = require("fs");
const size = fs.statSync("little-dragon.vsix").size;
if (size < 20000 || size > 2000000) { console.error(`little-dragon.vsix: unexpected size ${size}`); process.exit(1); }
console.log(`little-dragon.vsix: ${size} bytes`);
'
"${OFFLINE[@]}" npx --no-install vsce ls --no-dependencies | sort > out/vsix-files.txt
expected=$'LICENSE.txt\nREADME.md\ndist/extension.js\nlanguage-configuration.json\npackage.json\nsnippets/dragon.json\nsyntaxes/dragon.tmLanguage.json'
if [ "$(cat out/vsix-files.txt)" != "$expected" ]; then
  echo "ci.sh: unexpected files in the .vsix:"; diff <(echo "$expected") out/vsix-files.txt || true; exit 1
fi

host=0
if [ "${DRAGON_HOST_TEST:-0}" = "1" ]; then
  bash test/host/run.sh --install-only   # npm registry only
  if [ ${#OFFLINE[@]} -gt 0 ] && command -v ip >/dev/null 2>&1; then
    # code-server and Chromium talk over loopback: bring it up inside the empty namespace.
    unshare -n sh -c 'ip link set lo up && exec bash test/host/run.sh little-dragon.vsix' 2>&1 | tee out/host.log
  else
    bash test/host/run.sh little-dragon.vsix 2>&1 | tee out/host.log
  fi
  host=$(grep -E '^host: [0-9]+ passed' out/host.log | awk '{print $2}')
fi

# One closing line for the whole run: highlighting test files, node's tests, the host test.
count() { grep -E "^# $1 [0-9]+$" out/test.log | tail -1 | awk '{print $3}'; }
grammar=$(grep -cE '^✓ ' out/test.log || true)
echo "ci.sh: extension OK (.vsix packaged)"
echo "extension: $(( grammar + $(count pass) + host )) passed, $(count fail) failed, $(count skipped) skipped"
