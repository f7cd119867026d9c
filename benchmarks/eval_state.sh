#!/usr/bin/env bash
# The H200 evaluation's state (/tmp/eval-h200), packed so that it outlives a device machine:
#   bash benchmarks/eval_state.sh pack ARCHIVE      # what a later call or session needs to go on
#   bash benchmarks/eval_state.sh unpack [ARCHIVE]  # into /tmp, unless /tmp/eval-h200 is there already
# Kept: complete MetaSchedule databases with their meta.json (tuning wall time), the wall times of
# verified answers, vendor timings, peaks, the model's answers (`dragon eval --generate-only` writes
# them on a CPU machine), results, report, plots, logs and the engine's results cache less its
# references (so a fresh machine re-measures nothing measured before; references are computed again).
# Without ARCHIVE, unpack takes ./eval-h200.tgz (carried) or data/runs/eval-cuda/eval-h200.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  pack)
    archive=${2:?archive path}
    keep=$(cd /tmp && for m in eval-h200/metaschedule/*/*/meta.json; do
      [ -f "$m" ] && d=$(dirname "$m") && echo "$m $d/database_workload.json $d/database_tuning_record.json"
    done)
    # the results cache without its references (large; computed again on the CPU in seconds): a fresh
    # machine then re-measures nothing that an earlier call measured
    stage=$(mktemp -d); mkdir -p "$stage/eval-h200/cache"; results=
    if [ -f /tmp/eval-h200/cache/results.sqlite ]; then
      python3 - /tmp/eval-h200/cache/results.sqlite "$stage/eval-h200/cache/results.sqlite" <<'PY' && results=1
import sqlite3, sys
src, dst = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2])
src.backup(dst)
dst.execute("DELETE FROM refs"); dst.commit(); dst.execute("VACUUM"); dst.close()
PY
    fi
    (cd /tmp && tar czf "$archive" --ignore-failed-read $keep \
       $(ls -d eval-h200/results*.json eval-h200/report.md eval-h200/*.png eval-h200/cache/*.json eval-h200/logs \
          eval-h200/model 2>/dev/null) \
       ${results:+-C "$stage" eval-h200/cache/results.sqlite})
    rm -rf "$stage"
    echo "packed $archive: $(echo $keep | wc -w | awk '{print $1 / 3}') complete MetaSchedule databases, "\
"$(ls /tmp/eval-h200/model 2>/dev/null | wc -l) model answer files" ;;
  unpack)
    [ -d /tmp/eval-h200 ] && { echo "/tmp/eval-h200 is there: nothing unpacked"; exit 0; }
    for a in ${2:-} eval-h200.tgz data/runs/eval-cuda/eval-h200.tgz; do
      [ -f "$a" ] && { tar xzf "$a" -C /tmp; echo "resuming from $a"; exit 0; }
    done
    echo "no evaluation state to resume: starting afresh" ;;
  *) echo "usage: $0 pack ARCHIVE | unpack [ARCHIVE]" >&2; exit 2 ;;
esac
