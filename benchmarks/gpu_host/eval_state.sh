#!/usr/bin/env bash
# The evaluation's state (/tmp/eval-state), packed so that it outlives a GPU machine whose disk does not
# last beyond one call (docs/GPU-BENCHMARKS.md):
#   bash benchmarks/gpu_host/eval_state.sh pack ARCHIVE      # what a later call or session needs to go on
#   bash benchmarks/gpu_host/eval_state.sh unpack [ARCHIVE]  # into /tmp, unless /tmp/eval-state is there already
# Kept: complete MetaSchedule databases with their meta.json (tuning wall time), the wall times of
# verified answers, vendor timings, peaks, the model's answers (`dragon eval --generate-only` writes
# them on a CPU machine), results, report, plots, logs and the engine's results cache less its
# references (so a fresh machine re-measures nothing measured before; references are computed again).
# Without ARCHIVE, unpack takes ./eval-state.tgz (the previous call's $OUT/eval-state.tgz, carried).
# The state is /tmp/eval-state unless EVAL_STATE names another folder.
set -uo pipefail
cd "$(dirname "$0")/../.."
# EVAL_STATE: the state's folder (tests use another); archive members are always eval-state/...
state=${EVAL_STATE:-/tmp/eval-state}
parent=$(dirname "$state"); name=$(basename "$state")
case "${1:-}" in
  pack)
    archive=$(realpath -m "${2:?archive path}")
    keep=$(cd "$parent" && for m in "$name"/metaschedule/*/*/meta.json; do
      [ -f "$m" ] && d=$(dirname "$m") && echo "$m $d/database_workload.json $d/database_tuning_record.json"
    done)
    # the results cache without its references (large; computed again on the CPU in seconds): a fresh
    # machine then re-measures nothing that an earlier call measured
    stage=$(mktemp -d); mkdir -p "$stage/$name/cache"; results=
    if [ -f "$state/cache/results.sqlite" ]; then
      python3 - "$state/cache/results.sqlite" "$stage/$name/cache/results.sqlite" <<'PY' && results=1
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.execute("DELETE FROM refs"); dst.commit(); dst.execute("VACUUM"); dst.close()
PY
    fi
    (cd "$parent" && tar czf "$archive" --ignore-failed-read --transform "s|^$name/|eval-state/|" $keep \
       $(ls -d "$name"/results*.json "$name"/report.md "$name"/*.png "$name"/cache/*.json "$name"/logs \
          "$name"/model 2>/dev/null) \
       ${results:+-C "$stage" "$name/cache/results.sqlite"})
    rm -rf "$stage"
    echo "packed $archive: $(echo $keep | wc -w | awk '{print $1 / 3}') complete MetaSchedule databases, "\
"$(ls "$state"/model 2>/dev/null | wc -l) model answer files$([ -n "$results" ] && echo ', the results cache')" ;;
  unpack)
    [ -d "$state" ] && { echo "$state is there: nothing unpacked"; exit 0; }
    for a in ${2:-} eval-state.tgz; do
      [ -f "$a" ] && { mkdir -p "$parent" && tar xzf "$a" -C "$parent" --transform "s|^eval-state/|$name/|" &&
                       echo "resuming from $a"; exit 0; }
    done
    echo "no evaluation state to resume: starting afresh" ;;
  *) echo "usage: $0 pack ARCHIVE | unpack [ARCHIVE]" >&2; exit 2 ;;
esac
