#!/usr/bin/env bash
# Labels for the training tasks of real networks, in one device command on a GPU host without
# network access (TVM from `pack-tvm .devcache`, lark and tornado as wheels in .whl):
#
#   . .devcache/unpack.sh; bash benchmarks/gpu_host/labels.sh SAMPLE_SECONDS TOTAL_SECONDS TASKS.jsonl
#
# 1. sample: `dragon corpus pretrain --tasks TASKS --split train` on every core (one shard a core)
#    for SAMPLE_SECONDS: dlight's script and MetaSchedule's `cuda` and `cuda-tensorcore` design
#    spaces, 16 samples each, every kept script passing the codec round trip and the compile check;
# 2. batch: every sampled script not measured before, and dlight's (`dragon_model.records --batch`;
#    workloads up to 1e10 FLOPs and 64 MB of parameters: the verifier's CPU reference keeps them all);
# 3. measure: `dragon measure` verifies each candidate against the unscheduled program and times it,
#    until TOTAL_SECONDS is nearly spent (rows are written as they come), in the order a cost model
#    trained on the measurements so far ranks them (`dragon_model.cost_model --order`);
# 4. report: the labels' speed over dlight (`dragon_model.label_report`) into $OUT/labels-summary.json.
#
# MIN_FLOPS=1e8 samples the tasks of at least that many FLOPs (GEMMs, convolutions: the cheapest-first
# order reaches them last) into a run of their own, pre-net-large; TASKS may be gzipped. MUTATE=1
# adds a mutation round (`dragon_model.mutation`): new candidates near each task's fastest.
#
# State (records and results) comes back as $OUT/labels-state.tgz; carried into the next call (as
# ./labels-state.tgz, or .labels/labels-state.tgz) the run resumes: finished tasks are not sampled
# again and measured candidates are not measured again.
set -uo pipefail
sample_s=${1:?seconds of sampling}
total_s=${2:?seconds in all}
tasks=${3:?tasks.jsonl}
MIN_FLOPS=${MIN_FLOPS:-0}   # MIN_FLOPS=1e8: the GEMMs and convolutions only, sampled into pre-net-large
run=pre-net; [ "$MIN_FLOPS" != 0 ] && run=pre-net-large
if [[ $tasks == *.gz ]]; then   # the name the run's configuration records is the file's, less .gz
  gunzip -c "$tasks" > /tmp/$(basename "$tasks" .gz) && tasks=/tmp/$(basename "$tasks" .gz)
fi
[ -f "$tasks" ] || { echo "labels.sh: $tasks: no such file" >&2; exit 2; }
end=$(( SECONDS + total_s - 25 ))   # 25 s for the report and the archive
W=/tmp/labels
mkdir -p $W "${OUT:=/tmp/labels-out}"
. benchmarks/gpu_host/device_env.sh || exit 1   # the TVM site, the .whl wheels, the package links
for state in labels-state.tgz .labels/labels-state.tgz; do
  [ -f $state ] && [ ! -f $W/results.jsonl ] && { tar -C $W -xzf $state; echo "resuming from $state"; }
done
python3 -c 'from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics as r; r()' || exit 1

n=$(nproc)
for i in $(seq 0 $((n - 1))); do
  timeout "$sample_s" python3 -m dragon_dsl.corpus.pretrain --out $W/$run --target cuda --per-space 16 \
    --tasks "$tasks" --split train --min-flops $MIN_FLOPS --shard $i/$n > $W/sample-$i.log 2>&1 &
done
wait
grep -h "^error" $W/sample-*.log | sort -u | head -3   # a run that could not start says why
python3 -m dragon_dsl.corpus.pretrain --out $W/$run --summary | tee $OUT/sample-summary.json
runs=$(cd $W && ls -d pre-net*)   # every run's records: the batch, the report and the state hold them all
run_dirs=$(for r in $runs; do echo $W/$r; done)

touch $W/results.jsonl
measure() {  # every candidate not measured yet, until the time left (less a margin) is spent
  rm -rf $W/batch
  # --jobs: every core parses the workloads (one process took 5 minutes over 3,384 records)
  timeout $(( ${1:-$end} - SECONDS > 10 ? ${1:-$end} - SECONDS : 10 )) \
    python3 -m dragon_model.records $run_dirs --batch $W/batch/batch.jsonl --max-flops 1e10 \
    --max-bytes 6.4e7 --measured $W/results.jsonl --jobs $n
  echo "batch: $(wc -l < $W/batch/batch.jsonl) candidates"
  # the cost model (`dragon_model.cost_model`), trained on every candidate measured so far, puts each
  # task's likeliest winners first (ORDER=0, or a host without xgboost: the batch stays smallest
  # workload first)
  python3 -c "import xgboost" 2>/dev/null || { ORDER=0; echo "no xgboost: the batch is measured smallest workload first" | tee -a $OUT/measure.log; }
  [ "${ORDER:-1}" != 0 ] && [ -s $W/results.jsonl ] && python3 -m dragon_model.cost_model $run_dirs \
    --measured $W/results.jsonl --order $W/batch/batch.jsonl --features $W/features.jsonl 2>&1 | tail -2 | tee -a $OUT/measure.log
  local left=$(( ${1:-$end} - SECONDS ))
  [ $left -gt 60 ] && [ -s $W/batch/batch.jsonl ] && timeout $left python3 -m dragon_dsl.cli.main measure \
    $W/batch/batch.jsonl --target cuda --out $W/results.jsonl --repeat 3 --min-repeat-ms 2 --run-timeout 10 --timeout 60 \
    --chunk ${LABEL_CHUNK:-400} --profile --seconds $(( left > 180 ? left - 120 : left / 3 )) 2>&1 | tail -25 | tee -a $OUT/measure.log
}
if [ -n "${MUTATE:-}" ]; then
  # MUTATE=1: a mutation round after the samples, in the second half of the time left: each task's
  # two fastest measured scripts with one sampled decision changed (`dragon_model.mutation`)
  measure $(( SECONDS + (end - SECONDS) / 2 ))
  # bounded like every step: a device command that runs past its limit loses the machine and the state
  left=$(( end - SECONDS - 90 ))
  [ $left -gt 30 ] && timeout $left python3 -m dragon_model.mutation $run_dirs --measured $W/results.jsonl | tee $OUT/mutation.json
fi
measure
python3 -m dragon_model.label_report $run_dirs --measured $W/results.jsonl --json $OUT/labels-summary.json
tar -C $W -czf $OUT/labels-state.tgz $(for r in $runs; do echo $r/config.json $r/records; done) results.jsonl
ls -la $OUT
