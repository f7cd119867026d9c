"""What the llvm target's CPU model is worth beside a schedule: each workload as written and with a
plain schedule (producers inlined, each remaining block's loops fused, split by 16 and vectorized;
then the same with the outer loop parallel over the cores),
compiled for generic x86-64 (`{"kind": "llvm"}`, no CPU model: float16 arithmetic becomes a library
call per element) and for this machine's CPU (`mcpu` = `tvm.target.codegen.llvm_get_system_cpu()`),
timed by TVM's time_evaluator (best of --repeat). Prints each figure and the ratios; not a timed test.

    python benchmarks/bench_cpu_target.py WORKLOAD.tvmscript [...] [--repeat 5]

The baseline is the program as written on the generic target, measured in the same run.
"""

from __future__ import annotations

import argparse
import sys


def _latency_us(mod, target, repeat: int) -> float:
    import numpy as np
    import tvm

    from dragon_dsl.engine.inputs import np_dtype
    from dragon_dsl.engine.signature import signature

    lib = tvm.compile(mod, target=tvm.target.Target(target))
    dev = tvm.cpu()
    args = [tvm.runtime.tensor(np.zeros(a.shape, np_dtype(a.dtype)), dev) for a in signature(mod["main"])]
    timer = lib.mod.time_evaluator("main", dev, number=10, repeat=repeat)
    return min(timer(*args).results) * 1e6


def _vectorized(mod, parallel: bool = False):
    """Producers inlined where TVM allows it; every remaining block's loops fused, split by 16 and
    the inner loop vectorized (PARALLEL: the outer loop run over the cores)."""
    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    for block in sch.get_child_blocks(sch.get_sblock("root"))[:-1]:
        try:
            sch.compute_inline(block)
        except Exception:  # a reduction or a block TVM cannot inline stays
            pass
    for block in sch.get_child_blocks(sch.get_sblock("root")):
        fused = sch.fuse(*sch.get_loops(block))
        outer, inner = sch.split(fused, [None, 16])
        sch.vectorize(inner)
        if parallel:
            sch.parallel(outer)
    return sch.mod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workloads", nargs="+", help=".tvmscript files")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    import tvm
    from rich.console import Console
    from rich.table import Table

    from dragon_dsl.tvm.workload import load_workload

    cpu = tvm.target.codegen.llvm_get_system_cpu()
    generic = {"kind": "llvm", "num-cores": 2}
    host = dict(generic, mcpu=cpu)
    table = Table(title=f"microseconds; this CPU: {cpu}")
    columns = ["written", "vectorized", "vectorized, parallel"]
    table.add_column("workload")
    for col in columns:
        for name in ("generic", cpu):
            table.add_column(f"{col}, {name}", justify="right")
    for path in args.workloads:
        mod = load_workload(open(path, encoding="utf-8").read())
        try:
            variants = [mod, _vectorized(mod), _vectorized(mod, parallel=True)]
        except Exception as exc:  # a workload the plain schedule does not fit
            print(f"{path}: no plain schedule ({type(exc).__name__}); as written only", file=sys.stderr)
            variants = [mod]
        cells = [_latency_us(m, t, args.repeat) for m in variants for t in (generic, host)]
        base = cells[0]
        shown = [f"{v:.1f} ({base / v:.2f}x)" for v in cells] + ["-"] * (2 * len(columns) - len(cells))
        table.add_row(path.rsplit("/", 1)[-1][:40], *shown)
    Console(width=160).print(table)
    print("(x: the program as written on the generic target over each figure, same run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
