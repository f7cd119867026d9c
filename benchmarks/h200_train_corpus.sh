#!/usr/bin/env bash
# One device call (after `. benchmarks/device_env.sh`): optionally train the llvm schedule model
# on the last GPU, and search the CUDA corpus on every GPU until the call's time is nearly spent.
# Everything that matters is written to $OUT:
#   models.tgz   the trained model(s) (weights, tokenizer, dragon_model.json with the valid curve)
#   runcuda.tgz  the CUDA search run: one run folder per shard (run.json + records), resumable
#   *.log        the logs
# Usage: bash benchmarks/h200_train_corpus.sh SEARCH_SECONDS [train]
#
# The search is split into SHARDS=2 fixed shards (runcuda-0, runcuda-1) so that a run started on
# a two-GPU machine resumes on a one-GPU machine and back: with one GPU per shard they run at
# once (each process owns its GPU: CUDA_VISIBLE_DEVICES), with one GPU they take turns.
# A previous call's runs come from ./runcuda.tgz (carried) or data/runs/cuda/runcuda.tgz.
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
for a in runcuda.tgz data/runs/cuda/runcuda.tgz; do
  [ -f $a ] && { tar xzf $a -C /tmp; echo "resuming from $a"; break; }
done
search() {  # shard gpu seconds workers
  CUDA_VISIBLE_DEVICES=$2 timeout "$3" python3 -m dragon_dsl.cli.main search wlcuda --out /tmp/runcuda-$1 \
    --target nvidia/nvidia-h100 --budget 16 --cost-model random --workers $4 --shard $1/$SHARDS \
    --json $OUT/search-$1.json >> $OUT/search-$1.log 2>&1
  echo "shard $1 exit $?"; tail -2 $OUT/search-$1.log
}
if [ "$ngpu" -ge $SHARDS ]; then
  w=$(( cores / SHARDS - 1 ))
  pids=()
  for s in $(seq 0 $((SHARDS - 1))); do search $s $s "$secs" $w & pids+=($!); done
  wait "${pids[@]}"
else
  for s in $(seq 0 $((SHARDS - 1))); do search $s 0 $(( secs / SHARDS )) $((cores - 1)); done
fi
if [ -n "${trainer:-}" ]; then
  wait $trainer; echo "training exit $?"; grep -h "sft: saved\|best" $OUT/train-*.log | tail -3
  rm -rf /tmp/m-*/checkpoints
  tar czf $OUT/models.tgz -C /tmp $(cd /tmp && ls -d m-*)
fi
tar czf $OUT/runcuda.tgz -C /tmp $(cd /tmp && for d in runcuda-*; do echo $d/run.json $d/records; done)
ls -la $OUT
