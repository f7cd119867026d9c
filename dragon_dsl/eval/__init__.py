"""The evaluation harness: methods against baselines on a folder of workloads.

    dragon eval --workloads DIR --target llvm|cuda --out OUT_DIR

Modules: metrics (pure functions, no TVM: every figure of the report), discover (the
folder's workloads, families and existing scripts), workload_info (FLOPs and bytes from
the TensorIR), peaks (device peaks for the roofline), methods (one function per method,
each returning measurement rows: the baselines here, metaschedule (tuning and its folder
layout), vendor (PyTorch operators and their timing), model_answers (the model's answers,
generated once and kept)), candidates (the context, rows and how every candidate is
measured), store (the locked JSON files shards share), host (where a run happened),
harness (one run -> the results dict), report (report.md and its plots). docs/EVAL.md
describes the output.
"""
