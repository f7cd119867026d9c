#!/usr/bin/env bash
# One call on the GPU machine (after `. benchmarks/gpu_host/device_env.sh`; docs/GPU-BENCHMARKS.md): the evaluation, sharded.
# Usage: [SHARDS=4] [K=4] [GENERATION_VERSION_MEASURED=4] bash benchmarks/gpu_host/eval.sh SECONDS [METHODS]
# (K: the model's best-of-k; K=1 measures its first answers only)
#
# SHARDS processes (default 4; workload j of the sorted names is shard j mod SHARDS) run `dragon eval --shard i/SHARDS` at once into one OUT folder
# (/tmp/eval-state): they share its caches and take turns on the GPU for every candidate (the
# engine's GPU lock), so that builds, MetaSchedule's searches and references overlap. Each shard
# starts nothing expected to end after SECONDS - 30 (`--stop-after`: a MetaSchedule run killed by
# the call's end is lost whole) and is killed at SECONDS. When every shard has measured
# everything, the run without --shard measures nothing new and writes results.json and report.md.
# The default order puts the cheap methods first (the model's answers take seconds to measure,
# MetaSchedule at 64 trials a minute per workload).
#
# The evaluation's state outlives the machine: $OUT/eval-state.tgz holds what a later call needs
# to go on (benchmarks/gpu_host/eval_state.sh says what). A call resumes from /tmp/eval-state when the
# machine still has it, else from ./eval-state.tgz (the previous call's archive, carried).
set -uo pipefail
secs=${1:?seconds}
methods=${2:-unscheduled,dlight,vendor,model,ms-random,metaschedule}
SHARDS=${SHARDS:-4}
out=/tmp/eval-state
bash benchmarks/gpu_host/eval_state.sh unpack
logs=$out/logs; mkdir -p $logs
# shard result files of another shard count are stale once SHARDS changes (the caches hold their
# measurements): `dragon eval-report` refuses to merge two counts, so they go
for f in $out/results-shard-*-of-*.json; do
  [ -e "$f" ] && [ "${f##*-of-}" != "$SHARDS.json" ] && rm -f "$f" && echo "removed stale $(basename $f)"
done
wl=/tmp/wle
[ -f $wl/manifest.jsonl ] || python3 -m dragon_dsl.cli.main workloads --count 44 --seed 2027 --max-flops 2e9 \
  --max-bytes 6.4e7 -o $wl > /dev/null
# the improvement task's inputs: each workload's random design-space sample as a .dragon script
# (imported from the ms-random databases of the evaluation in benchmarks/results/gpu_eval_methods)
cp benchmarks/results/gpu_eval_methods/existing/*.dragon $wl/
w=$(( $(nproc) / SHARDS - 1 )); [ $w -lt 1 ] && w=1
# the model's answers measured are those stored in the state under GENERATION_VERSION_MEASURED
# (written beforehand on a CPU machine with --generate-only: the device has no xgrammar to generate)
args=(eval --workloads $wl --target cuda --methods $methods --budgets 16,64 --k ${K:-4} --workers $w
      --generation-version ${GENERATION_VERSION_MEASURED:-4} --out $out)
pids=()
for i in $(seq 0 $((SHARDS - 1))); do
  timeout "$secs" python3 -m dragon_dsl.cli.main "${args[@]}" --shard $i/$SHARDS --stop-after $((secs - 30)) \
    >> $logs/shard-$i.log 2>&1 &
  pids+=($!)
done
ok=1
for i in "${!pids[@]}"; do
  wait ${pids[$i]}; rc=$?; echo "shard $i exit $rc$([ $rc = 3 ] && echo ' (deferred work: call again)')"
  tail -3 $logs/shard-$i.log
  [ $rc -eq 0 ] || ok=0
done
# packed now, before the final run: a call killed at the device's limit returns what is in $OUT
bash benchmarks/gpu_host/eval_state.sh pack $OUT/eval-state.tgz
if [ $ok = 1 ]; then
  # the final run measures nothing new (all cached) but computes the references again: bounded by
  # what is left of the call (CALL_LIMIT, default 590 s: the device tool's 600 s less the packing)
  left=$(( ${CALL_LIMIT:-590} - SECONDS - 15 ))
  if [ $left -gt 30 ]; then
    # alone on the machine now: every core builds (the last --workers wins)
    timeout $left python3 -m dragon_dsl.cli.main "${args[@]}" --workers $(( $(nproc) - 1 )) > $logs/final.log 2>&1
    echo "final run exit $?"
    tail -3 $logs/final.log
    bash benchmarks/gpu_host/eval_state.sh pack $OUT/eval-state.tgz
  else
    echo "every shard is done; no time left for the final run ($left s): call again (it measures nothing new)"
  fi
fi
ls -la $OUT
