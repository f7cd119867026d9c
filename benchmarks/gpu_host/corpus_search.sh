#!/usr/bin/env bash
# One call on the GPU machine (after `. benchmarks/gpu_host/device_env.sh`; docs/GPU-BENCHMARKS.md): optionally train the llvm schedule model
# on the last GPU, and search the CUDA corpus on every GPU until the call's time is nearly spent.
# Everything that matters is written to $OUT:
#   models.tgz   the trained model(s) (weights, tokenizer, dragon_model.json with the valid curve)
#   runcuda.tgz  the CUDA search run: one run folder per shard (run.json + records), resumable
#   *.log        the logs
# Usage: bash benchmarks/gpu_host/corpus_search.sh SEARCH_SECONDS [train]
#
# The search is split into SHARDS=2 fixed run folders (runcuda-0, runcuda-1) so that a run started on
# a two-GPU machine resumes on a one-GPU machine and back. PROCS processes search each folder at
# once (sub-shards j/(SHARDS*PROCS)); on a two-GPU machine each folder has its GPU
# (CUDA_VISIBLE_DEVICES), on one GPU all processes share it and take turns for each candidate.
# A previous call's runs come from ./runcuda.tgz (that call's $OUT/runcuda.tgz, carried into this one).
set -uo pipefail
secs=${1:?seconds of CUDA search}
SHARDS=2
ngpu=$(nvidia-smi -L | grep -c '^GPU')
cores=$(nproc)
echo "gpus $ngpu, cores $cores"
if [ "${2:-}" = train ]; then
  CUDA_VISIBLE_DEVICES=$((ngpu - 1)) python3 -m dragon_model.train data/corpus/llvm -o /tmp/m-small-24 --target llvm --size small --epochs 24 \
    --batch-size 16 --lr 1e-3 --max-length 4096 --save-dtype float16 --keep-best \
    > $OUT/train-small-24.log 2>&1 &
  trainer=$!
fi
[ -f runcuda.tgz ] && { tar xzf runcuda.tgz -C /tmp; echo "resuming from runcuda.tgz"; }
PROCS=${PROCS:-2}   # search processes per run folder: they share the GPU (one run at a time: the
                    # engine's GPU lock) and overlap MetaSchedule's search, builds and references
search() {  # run-folder gpu seconds workers sub-shard
  local j=$(( $1 + SHARDS * $5 )) n=$(( SHARDS * PROCS ))
  CUDA_VISIBLE_DEVICES=$2 timeout "$3" python3 -m dragon_dsl.cli.main search wlcuda --out /tmp/runcuda-$1 \
    --target nvidia/nvidia-h100 --budget 16 --cost-model random --workers $4 --shard $j/$n \
    --json $OUT/search-$j.json >> $OUT/search-$j.log 2>&1
  echo "shard $j/$n (runcuda-$1) exit $?"; tail -2 $OUT/search-$j.log
}
# shard j of SHARDS*PROCS lies inside run folder j mod SHARDS (a workload's shard is its hash mod n)
nproc_all=$(( SHARDS * PROCS ))
w=$(( cores / nproc_all - 1 )); [ $w -lt 1 ] && w=1
pids=()
for s in $(seq 0 $((SHARDS - 1))); do
  gpu=$(( ngpu >= SHARDS ? s : 0 ))
  for r in $(seq 0 $((PROCS - 1))); do search $s $gpu "$secs" $w $r & pids+=($!); done
done
wait "${pids[@]}"
if [ -n "${trainer:-}" ]; then
  wait $trainer; echo "training exit $?"; grep -h "sft: saved\|best" $OUT/train-*.log | tail -3
  rm -rf /tmp/m-*/checkpoints
  tar czf $OUT/models.tgz -C /tmp $(cd /tmp && ls -d m-*)
fi
tar czf $OUT/runcuda.tgz -C /tmp $(cd /tmp && for d in runcuda-*; do echo $d/run.json $d/records; done)
ls -la $OUT
