#!/usr/bin/env bash
# One call on the GPU machine (after `. benchmarks/gpu_host/device_env.sh`; docs/GPU-BENCHMARKS.md): the CUDA corpus from the search runs, and
# the CUDA model trained on it. Writes to $OUT:
#   cuda-corpus.tgz  the corpus (Parquet splits, manifest.json, DATA_CARD.md): unpack into data/corpus/cuda
#   m-cuda.tgz       the trained model (weights, tokenizer, dragon_model.json): unpack into model/weights/cuda
#   cuda-model.log   what the build and the training said
# Usage: bash benchmarks/gpu_host/corpus_build.sh [EPOCHS] [CALL_SECONDS]
# The runs come from ./runcuda.tgz (corpus_search.sh's $OUT/runcuda.tgz, carried); the workloads are
# regenerated (deterministic). Every example is re-verified and timed again on this GPU.
# A corpus already in /tmp/cuda-corpus (an earlier call on the same held machine) or carried as
# ./cuda-corpus.tgz is reused (a partial one is completed: the build resumes), and
# training stops (keeping the best epoch so far) so that the call ends within CALL_SECONDS (570).
set -uo pipefail
SECONDS=0
epochs=${1:-24}
call_s=${2:-570}
log=$OUT/cuda-model.log
[ -f runcuda.tgz ] && { tar xzf runcuda.tgz -C /tmp; echo "runs from runcuda.tgz" | tee -a $log; }
# a build cut short on another machine goes on from its partial corpus (carried as ./cuda-corpus.tgz)
[ -d /tmp/cuda-corpus ] || { [ -f cuda-corpus.tgz ] && tar xzf cuda-corpus.tgz -C /tmp && echo "corpus from cuda-corpus.tgz" | tee -a $log; }
[ -f wlcuda/manifest.jsonl ] || python3 -m dragon_dsl.cli.main workloads --count 340 --seed 7 --max-flops 2e9 \
  --max-bytes 6.4e7 -o wlcuda > /dev/null
t0=$SECONDS
if [ -f /tmp/cuda-corpus/manifest.json ]; then
  echo "corpus from an earlier call: /tmp/cuda-corpus" | tee -a $log
else
timeout $((call_s - 10)) python3 -m dragon_dsl.cli.main corpus build /tmp/runcuda-0 /tmp/runcuda-1 --workloads wlcuda --out /tmp/cuda-corpus \
  >> $log 2>&1 || { echo "corpus build stopped (carry \$OUT/cuda-corpus.tgz to go on)"; tail -5 $log
                    tar czf $OUT/cuda-corpus.tgz -C /tmp cuda-corpus; exit 1; }
python3 -m dragon_dsl.cli.main corpus card /tmp/cuda-corpus >> $log 2>&1
echo "corpus built in $((SECONDS - t0)) s" | tee -a $log; tail -2 $log
fi
tar czf $OUT/cuda-corpus.tgz -C /tmp cuda-corpus
t0=$SECONDS
left=$((call_s - SECONDS - 25))   # saving and packing the model take a few seconds
[ $left -lt 60 ] && { echo "no time left to train in this call ($left s): call again"; exit 0; }
# CUDA scripts reach 5.2k tokens (tensor-core schedules ~155 statements): 8192 positions
python3 -m dragon_model.train /tmp/cuda-corpus -o /tmp/m-cuda --target cuda --size small --epochs "$epochs" \
  --batch-size 8 --lr 1e-3 --max-length 8192 --save-dtype float16 --keep-best --max-seconds $left >> $log 2>&1 \
  || { echo "training failed"; tail -20 $log; exit 1; }
echo "trained in $((SECONDS - t0)) s" | tee -a $log; grep -h "sft: saved\|best" $log | tail -3
rm -rf /tmp/m-cuda/checkpoints
tar czf $OUT/m-cuda.tgz -C /tmp m-cuda
ls -la $OUT
