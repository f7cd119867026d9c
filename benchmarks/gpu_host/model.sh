#!/usr/bin/env bash
# The second-generation CUDA schedule model on a GPU host without network access, in phases that
# each fit one device command (every phase leaves its state in /tmp/gen2 for the next while the
# machine is held, and its results under $OUT):
#
#   bash benchmarks/gpu_host/model.sh env                  # once per machine: TVM site, wheels, links
#   bash benchmarks/gpu_host/model.sh data SECONDS         # pretraining records on every core
#   bash benchmarks/gpu_host/model.sh label SECONDS [TAR...]  # every record's scripts verified and timed
#                                                      # (`dragon measure`; the committed records and TARs;
#                                                      # LABEL_BATCH=X.tar.xz: a batch written beforehand;
#                                                      # PRIOR=R.jsonl.xz: its rows measured earlier, kept;
#                                                      # LABEL_CHUNK=N: candidates per engine call)
#   bash benchmarks/gpu_host/model.sh rows                 # records (+ measured labels) -> training rows
#   bash benchmarks/gpu_host/model.sh train SECONDS SIZE   # pretrain, then fine-tune, on the GPU; the model
#                                                      # comes back as $OUT/model.tar.part-* (cat | tar -x)
#   BASE=DIR bash benchmarks/gpu_host/model.sh finetune SECONDS  # fine-tuning only, from a trained model,
#                                                      # on the sft rows of every measured label
#   bash benchmarks/gpu_host/model.sh llvm-train SECONDS [SIZE]  # the llvm model: llvm records, then the llvm corpus
#   bash benchmarks/gpu_host/model.sh llvm-eval SECONDS    # its held-out families, new and shipped model
#   bash benchmarks/gpu_host/model.sh eval SECONDS [K]     # held-out real operators (SETS=operators,families:
#                                                      # and held-out families; SETS=tasks: TASK_COUNT
#                                                      # tasks of the networks' TASK_SPLIT, default
#                                                      # validation): dlight vs the model (EVAL_TAG=T:
#                                                      # into eval-SET-T, one folder a model)
#                                                      # (MODEL=DIR: another model folder; the tasks'
#                                                      # folders are eval-tasks-SPLIT-T); reports, results
#                                                      # and answers come back as $OUT/eval.tar.xz
#
# A phase ends within its SECONDS, archives included: a device command killed at its time limit
# loses the machine and everything the phases left in /tmp/gen2.
#
# `env` expects the TVM site bundle in .devcache (`pack-tvm .devcache`, sourced by unpack.sh) and
# the pure-Python wheels the host lacks in .whl (lark, xgrammar, trl, datasets and their needs).
set -uo pipefail
phase=${1:?phase}
W=/tmp/gen2
mkdir -p $W "${OUT:=/tmp/gen2-out}"
# the pure-Python wheels the host lacks (.whl) into /tmp/site
wheels() { python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; }
setup() {
  export PYTHONUNBUFFERED=1 PYTHONPATH=/opt/dragon-site
  [ -d /tmp/site ] && export PYTHONPATH=/tmp/site:$PYTHONPATH
  mkdir -p /tmp/pk
  ln -sfn "$PWD/model" /tmp/pk/dragon_model
  ln -sfn "$PWD/lsp" /tmp/pk/dragon_lsp
  ln -sfn "$PWD/grammar" /tmp/pk/dragon_grammar
  export PYTHONPATH=$PWD:/tmp/pk:$PYTHONPATH
}
# the CUDA record folders: the committed archives (unpacked once) and a `data` phase's runs
record_folders() {
  mkdir -p $W/rec
  [ -n "$(ls $W/rec)" ] || for t in data/pretrain/cuda/records*.tar.xz; do tar -C $W/rec -xJf "$t"; done
  ls -d $W/pre-dlight $W/pre-spaces $W/rec/* 2>/dev/null
}
# a --measured flag for each label file: the shipped ones (data/pretrain/cuda/labels-*.jsonl.xz)
# and this machine's `label` results, if any
measured_flags() {
  ls data/pretrain/cuda/labels-*.jsonl.xz $W/label/results.jsonl 2>/dev/null | sed 's/^/--measured /'
}
# pretraining on PRE_ROWS for PRE seconds (GRACE more for loading and the save), then fine-tuning
# from those weights on SFT_ROWS until $end (30 s kept for the last evaluation and the save); the
# logs go to $OUT/LOG-pre.log and LOG-sft.log, the model (fine-tuned, else pretrained) to
# $OUT/NAME.tar.part-* in parts of at most 15 MB (a device call returns at most 8 files of 16 MiB).
# Optimizer steps are what the first run lacked (344 steps of batch 32: validation loss 1.71): small
# batches, many epochs, the time limit decides. lr 2e-3 reached NaN weights within 3,135 steps of
# bf16 pretraining (and fine-tuning inherited them): 1e-3, and --keep-best keeps the best epoch's.
# a training log as it comes back: its first 30 lines, the first 5 that show a NaN (where a run
# diverged), and its last 40
log_excerpt() {
  local lines; lines=$(grep -v "Writing model shards" "$1")
  { echo "$lines" | head -30; echo "..."; echo "$lines" | grep -n -m5 -i "nan"; echo "..."; echo "$lines" | tail -40; }
}
pretrain_finetune() {  # DIR TARGET SIZE PRE_ROWS PRE GRACE SFT_ROWS LOG NAME [fine-tuning options]
  local dir=$1 target=$2 size=$3 pre_rows=$4 pre=$5 grace=$6 sft_rows=$7 log=$8 name=$9; shift 9
  # PRE_BASE=DIR: pretraining goes on from that model's weights (and tokenizer) at the base rate cap;
  # PRE_BATCH: its batch size (16)
  timeout $(( pre + grace )) python3 -m dragon_model.train $pre_rows -o $dir/m-pre --target $target --size $size ${PRE_BASE:+--base $PRE_BASE} \
    --epochs 20 --batch-size ${PRE_BATCH:-16} --lr ${PRE_LR:-1e-3} --max-length 3072 --save-dtype float32 --max-seconds $pre \
    --keep-best > $dir/train-pre.log 2>&1
  log_excerpt $dir/train-pre.log > $OUT/$log-pre.log; tail -3 $OUT/$log-pre.log
  local ft=$(( end - SECONDS - 30 ))
  [ -f $dir/m-pre/config.json ] && [ $ft -gt 30 ] && timeout $(( end - SECONDS )) python3 -m dragon_model.train $sft_rows \
    -o $dir/m-sft --target $target --base $dir/m-pre --epochs 40 --lr 1e-3 --save-dtype float16 --max-seconds $ft \
    --keep-best "$@" > $dir/train-sft.log 2>&1
  log_excerpt $dir/train-sft.log > $OUT/$log-sft.log; tail -3 $OUT/$log-sft.log
  local m=$dir/m-sft; [ -f $m/config.json ] || m=$dir/m-pre
  tar -C "$(dirname $m)" --exclude=checkpoints -cf - "$(basename $m)" | split -b 15M - $OUT/$name.tar.part-
}
case $phase in
env)
  [ -d .whl ] && wheels
  setup
  python3 -m compileall -q -j "$(nproc)" /opt/dragon-site /tmp/site > /dev/null 2>&1
  python3 -c 'import tvm, xgrammar, lark, dragon_dsl, dragon_model, torch; print("env ok", tvm.__version__, torch.cuda.get_device_name())'
  # TVM's tensor intrinsics into the user's cache once, before any engine starts its workers
  python3 -c 'from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics as r; r()'
  ;;
label)
  # SECONDS for the whole phase: unpacking and the batch count, and 15 s for the archive at the end
  setup
  secs=${2:-300}; shift 2 || shift $#
  end=$(( SECONDS + secs - 15 ))
  mkdir -p $W/rec $W/label
  for t in data/pretrain/cuda/records.tar.xz "$@"; do tar -C $W/rec -xJf "$t"; done
  if [ -n "${LABEL_BATCH:-}" ]; then
    # a batch written beforehand on another machine (tar.xz of batch.jsonl and workloads/):
    # `python -m dragon_model.records ... --batch B/batch.jsonl --max-flops 1e10; tar -C B -cJf X .`
    tar -C $W/label -xJf "$LABEL_BATCH"
  else
    # the verifier's reference is the unscheduled program on the CPU: minutes for the largest workloads
    python3 -m dragon_model.records $W/rec/* --batch $W/label/batch.jsonl --max-flops ${MAX_FLOPS:-1e10}
  fi
  # rows measured earlier (PRIOR, e.g. the shipped labels) start the results file: `dragon measure`
  # resumes after them, and a second call while the machine is held resumes after this one
  if [ -n "${PRIOR:-}" ] && [ ! -s $W/label/results.jsonl ]; then xz -dc "$PRIOR" > $W/label/results.jsonl; fi
  # --seconds ends the run between engine calls (of 1,024 candidates: under a minute at the
  # benchmark's rate; smaller calls end each on the GPU's own tail) with its summary and profile
  # printed; the timeout only backs it up (rows are written as they come: a timeout loses none).
  # With under 180 s left, a third of them: an engine call on large GEMMs outlasted a fixed 60 s.
  # An engine call that outlasts the margin is cut by the timeout, without the summary: on large
  # kernels (nvcc 1-2 s each) keep LABEL_CHUNK small (400 candidates overran 120 s)
  left=$(( end - SECONDS ))
  timeout $left python3 -m dragon_dsl.cli.main measure $W/label/batch.jsonl --target cuda \
    --out $W/label/results.jsonl --repeat 3 --min-repeat-ms 2 --run-timeout 10 --timeout 60 --profile ${LABEL_CHUNK:+--chunk $LABEL_CHUNK} \
    --seconds $(( left > 180 ? left - 120 : left / 3 )) 2>&1 | tail -25 | tee $OUT/label.log
  xz -T0 -6 -c $W/label/results.jsonl > $OUT/label-results.jsonl.xz
  ;;
data)
  setup
  secs=${2:-420}
  n=$(nproc)
  dl=$(( n / 4 )); sp=$(( n - dl ))   # a quarter label with dlight (fast), the rest sample design spaces
  ex=conv1d,reduction,reduction_typed  # the CUDA corpus' test families stay unseen
  for i in $(seq 0 $((dl - 1))); do
    timeout "$secs" python3 -m dragon_dsl.corpus.pretrain --out $W/pre-dlight --target cuda --count 8000 \
      --spaces dlight --exclude-families $ex --shard $i/$dl > $W/dl-$i.log 2>&1 &
  done
  for i in $(seq 0 $((sp - 1))); do
    timeout "$secs" python3 -m dragon_dsl.corpus.pretrain --out $W/pre-spaces --target cuda --count 5000 \
      --per-space 16 --spaces cuda,cuda-tensorcore --exclude-families $ex --shard $i/$sp > $W/sp-$i.log 2>&1 &
  done
  wait
  for d in pre-dlight pre-spaces; do python3 -m dragon_dsl.corpus.pretrain --out $W/$d --summary; done | tee $OUT/data-summary.json
  tar -C $W -cf - pre-dlight pre-spaces | xz -T0 -6 > $OUT/pretrain-records.tar.xz
  ;;
rows)
  setup
  python3 -m dragon_model.records $(record_folders) ${EXTRA_RECORDS:-} --out $W/rows $(measured_flags) \
    --corpus data/corpus/cuda --jobs "$(nproc)" 2>&1 | tee $OUT/rows.log
  ;;
train)
  # SECONDS for the whole phase, the archive included: a command past its limit loses the machine
  setup
  secs=${2:-480}; size=${3:-base}
  end=$(( SECONDS + secs - 25 ))
  pre=$(( secs * 55 / 100 ))
  pretrain_finetune $W cuda $size $W/rows/pretrain $pre 90 $W/rows/sft train model --batch-size 16 --max-length 3072
  ls -la $OUT
  ;;
eval)
  # SETS: operators (the 50 held-out real operators), families (the CUDA corpus' held-out families,
  # conv1d and reductions, at shapes of another seed); each set's answers are generated first by
  # GEN_SHARDS processes side by side (the decoder replays every statement with TVM on the CPU),
  # then measured against dlight in one run. The operators' CPU references (a 512 x 11008 x 4096 fp16
  # GEMM...) took 270-300 s before the first measurement with the program as written (the reference
  # program is 7.85x faster on one CPU core: benchmarks/results/cpu_reference_program.md): give that
  # set a call of its own (SETS=operators eval 560 1). A second call while the machine is held goes on from the first:
  # the references over 256 MiB are kept as files in the eval's cache, and the baselines and the
  # answers written beforehand are measured in one engine call each
  setup
  secs=${2:-420}; k=${3:-1}
  end=$(( SECONDS + secs - 20 ))
  model=${MODEL:-$W/m-sft}; [ -f $model/config.json ] || model=$W/m-pre   # MODEL: e.g. a model brought back
  sets=${SETS:-operators}; n=$(echo $sets | tr , ' ' | wc -w); shards=${GEN_SHARDS:-8}
  # a set's folders: wl-SET and eval-SET[-TAG]; the tasks' name their split (wl-tasks-test: a test
  # run after a validation run on the same machine must not find the validation workloads)
  folder() { if [ "$1" = tasks ]; then echo tasks-${TASK_SPLIT:-validation}; else echo "$1"; fi; }
  wl_dir() { echo $W/wl-$(folder $1); }                          # a set's workloads
  eval_dir() { echo $W/eval-$(folder $1)${EVAL_TAG:+-$EVAL_TAG}; }  # a set's answers, results, report
  for set in ${sets//,/ }; do
    wl=$(wl_dir $set)
    [ -f $wl/manifest.jsonl ] || case $set in
      operators) python3 -m dragon_dsl.cli.main workloads --held-out-operators -o $wl > /dev/null ;;
      families) python3 -m dragon_dsl.cli.main workloads --families conv1d,reduction,reduction_typed \
                  --count ${FAMILY_COUNT:-24} --seed 2027 --max-flops 2e9 --max-bytes 6.4e7 -o $wl > /dev/null ;;
      tasks) python3 -m dragon_dsl.cli.main workloads --tasks data/tasks/tasks.jsonl.gz --split ${TASK_SPLIT:-validation} \
               --count ${TASK_COUNT:-40} --seed 2027 --max-flops 2e9 --max-bytes 6.4e7 -o $wl > /dev/null ;;
      *) echo "unknown set $set" >&2; exit 2 ;;
    esac
  done
  # STARTS=1: the improvement task too, from the sampled starting scripts committed beside the reports
  # (`dragon workloads ... --starting-scripts cuda`, written with the same workloads; the tasks' in
  # starts/tasks-validation and starts/tasks-test)
  [ -n "${STARTS:-}" ] && for set in ${sets//,/ }; do
    cp benchmarks/results/gpu_eval/starts/$(folder $set)/*.dragon $(wl_dir $set)/; done
  # ANSWERS=DIR: answers written beforehand elsewhere (a CPU's `dragon eval --generate-only --out
  # DIR/SET`), copied into $W/eval-SET/model; those of this decoder version and model are measured as
  # they are, and any missing is generated here.
  # GEN_VERSION=N: measure the stored answers of decoder version N (none generated)
  [ -n "${ANSWERS:-}" ] && for set in ${sets//,/ }; do
    mkdir -p $(eval_dir $set)/model && cp $ANSWERS/$set/model/*.json $(eval_dir $set)/model/; done
  common="--target cuda --methods dlight,model --k $k --model-path $model${GEN_VERSION:+ --generation-version $GEN_VERSION}"
  gen=$(( (end - SECONDS) * 45 / 100 ))
  # GEN_SHARDS processes in all, shared among the sets (two sets of 15 shards each put 30 generating
  # processes on 16 cores); one torch thread each (15 shards of 16 threads on 16 cores switched
  # threads more than they worked; the forward pass itself runs on the GPU where there is one)
  per=$(( shards / n > 0 ? shards / n : 1 ))
  # The forward pass stays on the GPU: 15 processes each running the model on one of the host's
  # cores (CUDA_VISIBLE_DEVICES= ) wrote 10x slower than one such process on
  # a 2-core laptop CPU (52 s against 5 s for one linear layer's answer), and the 60-s generation
  # limit cut the answers (74% of the operators' first answers verified, 17% of the families')
  for set in ${sets//,/ }; do
    for i in $(seq 0 $((per - 1))); do
      OMP_NUM_THREADS=1 timeout -k 10 $gen python3 -m dragon_dsl.cli.main eval \
        --workloads $(wl_dir $set) $common --out $(eval_dir $set) --generate-only --shard $i/$per > $W/gen-$set-$i.log 2>&1 &
    done
  done
  wait
  tail -qn1 $W/gen-*.log | tee $OUT/generate.log
  for set in ${sets//,/ }; do
    left=$(( (end - SECONDS) / n )); n=$(( n - 1 ))
    if [ $left -le 45 ]; then  # too little left to measure anything: say so, keep what is there
      echo "eval $set: ${left} s left, nothing measured (give the phase more SECONDS)" | tee $OUT/eval-$set.log; continue
    fi
    # as shard 0 of 1, then merged: measurements the time left defers still leave an interim report
    # of those done (a plain --stop-after run writes none, and the machine goes with its caches)
    # -k: SIGTERM waits for the Python code, which a long call into TVM (the operators' CPU references:
    # minutes) holds off; an eval call of both sets at k=4 ran past the device command's limit
    timeout -k 10 $(( left + 5 )) python3 -m dragon_dsl.cli.main eval --workloads $(wl_dir $set) $common --out $(eval_dir $set) \
      --stop-after $(( left - 35 )) --shard 0/1 2>&1 | tail -30 | tee $OUT/eval-$set.log
    python3 -m dragon_dsl.cli.main eval-report $(eval_dir $set) 2>&1 | tail -2 | tee -a $OUT/eval-$set.log
  done
  # every set's report and results, and the answers themselves, in one file: a device command
  # returns a limited number of files, and copied one by one the later ones can be lost
  tar -C $W -cJf $OUT/eval.tar.xz $(cd $W && ls eval-*/report.md eval-*/results.json 2>/dev/null) \
    $(cd $W && ls -d eval-*/model 2>/dev/null)
  ;;
finetune)
  # fine-tuning only, from BASE (a model folder, e.g. one brought back by `train`): the sft rows
  # (every measured label: the shipped ones and this machine's `label` results) rendered without
  # the pretraining rows (FT_REPEAT=N: each measured label that beats dlight's script N times;
  # FT_PLAIN=1: answers without the queries whose results nothing uses; FT_MEASURED_ONLY=1: only
  # the workloads with a measured label, not dlight's script where nobody measured; FT_EXCLUDE=A,B:
  # no rows of those families, e.g. row_absmax, whose dlight label runs one thread per row), then
  # FT_LR (2e-4, the rate cap of a run from a base) over the clock; EXTRA_RECORDS="DIR ...": more
  # record folders (a `labels.sh` run's pre-net: real networks' training tasks), EXTRA_MEASURED="F ...":
  # their measured results; FT_CANONICAL=all: trained under canonical names (`train --canonical-names`);
  # SECONDS for the whole phase; the model comes back as $OUT/model.tar.part-*.
  # FT_ROWS=F.jsonl.xz: rows rendered beforehand under canonical names (`python -m dragon_model.renaming
  # ROWS -o F`, with FT_CANONICAL=all) instead of the records: no TVM needed, only the wheels of .whl
  setup
  secs=${2:-480}
  end=$(( SECONDS + secs - 25 ))
  base=${BASE:?BASE=a model folder}
  if [ -n "${FT_ROWS:-}" ]; then
    [ -d /tmp/site ] || wheels
    export PYTHONPATH=/tmp/site:$PYTHONPATH
    mkdir -p $W/rows-ft/sft && cp "$FT_ROWS" $W/rows-ft/sft/
  else timeout $(( end - SECONDS - 60 )) python3 -m dragon_model.records $(record_folders) ${EXTRA_RECORDS:-} --out $W/rows-ft \
    $(measured_flags) $(for f in ${EXTRA_MEASURED:-}; do echo --measured $f; done) \
    --corpus data/corpus/cuda --jobs "$(nproc)" --sft-only ${FT_REPEAT:+--label-repeat $FT_REPEAT} ${FT_PLAIN:+--plain-labels} \
    ${FT_MEASURED_ONLY:+--measured-only} ${FT_EXCLUDE:+--exclude-families $FT_EXCLUDE} 2>&1 | tee $OUT/rows.log
  fi
  ft=$(( end - SECONDS - 30 ))
  timeout $(( end - SECONDS )) python3 -m dragon_model.train $W/rows-ft/sft -o $W/m-ft --target cuda --base $base \
    --epochs 40 --lr ${FT_LR:-2e-4} --save-dtype float16 --max-seconds $ft --keep-best --batch-size 16 \
    --max-length 3072 ${FT_CANONICAL:+--canonical-names $FT_CANONICAL} > $W/train-ft.log 2>&1
  log_excerpt $W/train-ft.log > $OUT/finetune.log; tail -3 $OUT/finetune.log
  [ -f $W/m-ft/config.json ] && tar -C $W --exclude=checkpoints -cf - m-ft | split -b 15M - $OUT/model.tar.part-
  ;;
llvm-train)
  # the llvm model on the same plan: pretraining on the llvm records (data/pretrain/llvm), then
  # fine-tuning on the measured llvm corpus (data/corpus/llvm, its held-out families never seen)
  # and the records' measured labels (data/pretrain/llvm/labels-cpu*.jsonl.xz: large and small
  # workloads, the real networks' training tasks; no schedule where no sample beats the program as
  # written); SECONDS for the whole phase, rows and archive included;
  # the model comes back as $OUT/llvm-model.tar.part-*
  setup
  secs=${2:-420}; size=${3:-small}
  end=$(( SECONDS + secs - 20 ))
  L=$W/llvm; mkdir -p $L/rec
  [ -n "$(ls $L/rec)" ] || for t in data/pretrain/llvm/records-cpu*.tar.xz; do tar -C $L/rec -xJf "$t"; done
  [ -f $L/rows/pretrain/rows.jsonl ] || python3 -m dragon_model.records $L/rec/* --out $L/rows --jobs "$(nproc)" \
    --corpus data/corpus/llvm $(ls data/pretrain/llvm/labels-cpu*.jsonl.xz 2>/dev/null | sed 's/^/--measured /') \
    | tee $OUT/llvm-rows.log
  pre=$(( (end - SECONDS) * 60 / 100 ))
  pretrain_finetune $L llvm $size $L/rows/pretrain $pre 60 $L/rows/sft llvm-train llvm-model --batch-size 8 --max-length 4096
  ;;
llvm-eval)
  # first answers on the llvm corpus' held-out families, the new model (MODEL, default the one
  # llvm-train left) and the shipped one on the same host, taking turns per half of SECONDS
  setup
  secs=${2:-600}; half=$(( (secs - 20) / 2 ))
  model=${MODEL:-$W/llvm/m-sft}; [ -f $model/config.json ] || model=$W/llvm/m-pre
  for m in "$model" model/weights/llvm; do
    name=$([ "$m" = model/weights/llvm ] && echo shipped || echo new)
    timeout $half python3 -m dragon_model.evaluate data/corpus/llvm --model "$m" --splits test_family --level time \
      --jobs "${JOBS:-8}" --max-seconds 60 --timeout 60 -o $OUT/first_answer_llvm-$name.json 2>&1 | tail -8 | tee $OUT/llvm-eval-$name.log
  done
  ;;
*) echo "unknown phase $phase" >&2; exit 2 ;;
esac
