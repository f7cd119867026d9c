"""The evaluation harness (issue 7): methods against baselines on a folder of workloads.

    dragon eval --workloads DIR --target llvm|cuda --out OUT_DIR

Modules: metrics (pure functions, no TVM: every figure of the report), discover (the
folder's workloads, families and existing scripts), workload_info (FLOPs and bytes from
the TensorIR), peaks (device peaks for the roofline), vendor (PyTorch operators), methods
(one function per method, each returning measurement rows), harness (one run -> the
results dict), report (report.md and its plots). docs/EVAL.md describes the output.
"""
