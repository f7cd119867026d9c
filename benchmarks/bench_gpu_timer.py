"""Two timers of a CUDA kernel against each other, with the host idle and with every core busy.

    python3 benchmarks/bench_gpu_timer.py [--rounds 6] [--out FILE.json]

Kernels of a few microseconds to a few hundred (elementwise adds of 2^10 .. 2^24 floats, one
thread per element) are built once with TVM, then timed in alternating rounds by TVM's
time_evaluator (the engine's `gpu_timer="evaluator"`) and by the blocked timer
(`dragon_dsl/engine/gpu_timer.py`, the default), 5 repeats of at least 5 ms each as the engine
times; in every other round one busy process per core loads the host, as a measuring run's
compilers do. Printed per kernel and timer: the median latency with the host idle and loaded,
their ratio, and the spread (largest / smallest of a timer's medians over all rounds). The
baseline (time_evaluator) is measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time


def _busy(stop):
    while not stop.is_set():
        pass


def kernel(n: int):
    import tvm
    from tvm.script import tirx as T

    @T.prim_func(s_tir=True)
    def add(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32"), C: T.Buffer((n,), "float32")):
        T.func_attr({"tirx.noalias": True, "global_symbol": "main"})
        for i in range(n):
            with T.sblock("C"):
                v = T.axis.spatial(n, i)
                C[v] = A[v] + B[v]

    sch = tvm.s_tir.Schedule(tvm.IRModule({"main": add}))
    (i,) = sch.get_loops(sch.get_sblock("C"))
    bx, tx = sch.split(i, [None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return sch.mod


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=6, help="rounds per timer, half of them with the host loaded")
    p.add_argument("--out", help="write the figures here as JSON")
    args = p.parse_args(argv)

    import numpy as np
    import tvm

    from dragon_dsl.engine import gpu_timer
    from dragon_dsl.engine.run import time_kernel

    dev = tvm.cuda(0)
    major, minor = str(dev.compute_version).split(".")
    target = tvm.target.Target({"kind": "cuda", "arch": f"sm_{major}{minor}"})
    sizes = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 1 << 24]
    built = {}
    for n in sizes:
        lib = tvm.compile(kernel(n), target=target)
        lib = getattr(lib, "mod", lib)  # the runtime module (time_evaluator is its method)
        tensors = [tvm.runtime.tensor(np.random.rand(n).astype("float32"), dev) for _ in range(3)]
        built[n] = (lib, tensors)
    t0 = time.perf_counter()
    gpu_timer.timer_for(dev)
    print(
        f"blocked timer ready in {time.perf_counter() - t0:.2f} s; spin {gpu_timer.timer_for(dev).per_us:.0f} "
        f"iterations/us",
        flush=True,
    )
    settings = dict(repeat=5, number=None, min_repeat_ms=5.0, flush_bytes=0)
    timers = {
        "evaluator": lambda lib, t: time_kernel(lib, dev, t, entry="main", **settings),
        "blocked": lambda lib, t: gpu_timer.time_module(lib, dev, t, entry="main", **settings),
    }
    got = {n: {name: {"idle": [], "loaded": []} for name in timers} for n in sizes}
    ctx = multiprocessing.get_context("fork")
    for r in range(args.rounds):
        loaded = r % 2 == 1
        stop, procs = ctx.Event(), []
        if loaded:
            procs = [ctx.Process(target=_busy, args=(stop,)) for _ in range(os.cpu_count() or 1)]
            for proc in procs:
                proc.start()
            time.sleep(0.5)
        try:
            for n in sizes:
                lib, tensors = built[n]
                for name, timer in timers.items():
                    got[n][name]["loaded" if loaded else "idle"].append(statistics.median(timer(lib, tensors)))
        finally:
            stop.set()
            for proc in procs:
                proc.join()
    report = {}
    print(f"\n{'elements':>10} {'timer':>10} {'idle us':>10} {'loaded us':>10} {'loaded/idle':>12} {'spread':>8}")
    for n in sizes:
        for name in timers:
            idle, busy = got[n][name]["idle"], got[n][name]["loaded"]
            both = idle + busy
            row = {
                "idle_us": statistics.median(idle),
                "loaded_us": statistics.median(busy),
                "loaded_over_idle": statistics.median(busy) / statistics.median(idle),
                "spread": max(both) / min(both),
                "rounds": {"idle": idle, "loaded": busy},
            }
            report.setdefault(str(n), {})[name] = row
            print(
                f"{n:>10} {name:>10} {row['idle_us']:>10.2f} {row['loaded_us']:>10.2f} "
                f"{row['loaded_over_idle']:>12.3f} {row['spread']:>8.3f}"
            )
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "command": "python3 benchmarks/bench_gpu_timer.py "
                    + " ".join(sys.argv[1:] if argv is None else argv),
                    "device": str(dev),
                    "kernels": report,
                },
                fh,
                indent=1,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
