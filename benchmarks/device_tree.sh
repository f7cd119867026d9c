#!/usr/bin/env bash
# The device tool carries the working tree with the TVM bundle (~61 MiB) in one call of at
# most 64 MiB. The first call of a device session only unpacks the bundle and needs no large
# tracked file, so move them aside for that call and put them back right after it:
#
#     bash benchmarks/device_tree.sh slim      # before call 1 (carry .devcache)
#     bash benchmarks/device_tree.sh restore   # right after it; later calls carry the full tree
#
# Files of more than 32 KiB are moved (256 KiB left the tree ~38 KB over the limit) to .device-stash/ (ignored by git: add it to
# .git/info/exclude); `restore` moves them back and checks them against git's index.
set -euo pipefail
cd "$(dirname "$0")/.."
stash=.device-stash
case "${1:-}" in
  slim)
    mkdir -p "$stash"
    git ls-files -z | while IFS= read -r -d '' f; do
      if [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt 32768 ]; then
        mkdir -p "$stash/$(dirname "$f")" && mv "$f" "$stash/$f" && echo "moved aside: $f"
      fi
    done ;;
  restore)
    [ -d "$stash" ] || { echo "nothing to restore"; exit 0; }
    (cd "$stash" && find . -type f -print0) | while IFS= read -r -d '' f; do
      mkdir -p "$(dirname "$f")" && mv "$stash/$f" "$f" && echo "restored: ${f#./}"
    done
    rm -rf "$stash"
    git diff --quiet -- . || { echo "warning: tracked files differ from the index after restore" >&2; git diff --stat; } ;;
  *) echo "usage: $0 slim|restore" >&2; exit 2 ;;
esac
