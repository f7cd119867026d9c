"""Throughput of the measurement engine on small llvm kernels (prints figures; not a timed test).

    python benchmarks/bench_engine.py [--candidates 48] [--cold 8]

Candidates are the llvm MetaSchedule candidates in tests/data/traces/sampled.jsonl of
the small workloads. Each is built, verified (3 random + 2 edge input sets against the
unscheduled reference) and timed. Three ways, measured in the same run:
  1. warm: one Engine, whose worker processes stay up (start-up counted separately);
  2. cold: a fresh Engine per candidate (fresh processes, reference recomputed,
     results cache off): what a tool that starts workers per request pays;
  3. MetaSchedule's stock LocalBuilder + LocalRunner on the same candidates, as one
     round (build + time only, no verification; LocalBuilder starts new processes per round).
Rates are candidates per minute; the ratios say how much faster the warm pool is.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SMALL = (
    "matmul_64",
    "softmax_64",
    "transpose_64x32",
    "ew_add_relu_128x64",
    "row_sum_64x256",
    "mean_center_64x128",
    "matmul_relu_64",
    "bmm_4x32",
    "matmul_bias_32",
    "gather_64",
    "matmul_31x31x17",
)
TARGET = {"kind": "llvm", "num-cores": 2}


def candidates(limit: int) -> list:
    out = []
    with open(ROOT / "tests" / "data" / "traces" / "sampled.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["workload"] in SMALL and isinstance(rec["target"], dict):
                out.append((str(ROOT / "tests" / "data" / "workloads" / f"{rec['workload']}.tvmscript"), rec["trace"]))
    return (out * (1 + limit // max(1, len(out))))[:limit]


def warm(cands, workers) -> dict:
    from dragon_dsl.engine import Engine, Task

    t0 = time.perf_counter()
    engine = Engine(TARGET, workers=workers, cache=False)
    engine.measure(cands[0][0], [[[], []]], level="build")  # waits for the workers to be up
    startup = time.perf_counter() - t0
    t1 = time.perf_counter()
    # one batch, as a search loop sends it (Engine.measure per workload works the same, with a
    # build/run phase boundary per call)
    results = engine.run([Task(path, trace, level="time", use_cache=False) for path, trace in cands])
    seconds = time.perf_counter() - t1
    statuses = Counter(r.status.value for r in results)
    engine.close()
    return {"seconds": seconds, "startup_s": startup, "n": len(cands), "statuses": dict(statuses)}


def cold(cands, workers) -> dict:
    from dragon_dsl.engine import Engine

    statuses = Counter()
    t0 = time.perf_counter()
    for path, trace in cands:
        with Engine(TARGET, workers=workers, cache=False) as engine:
            statuses.update(r.status.value for r in engine.measure(path, [trace], level="time"))
    return {"seconds": time.perf_counter() - t0, "n": len(cands), "statuses": dict(statuses)}


def stock(cands) -> dict:
    import tvm
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.builder import BuilderInput, LocalBuilder
    from tvm.s_tir.meta_schedule.runner import LocalRunner, RunnerInput

    from dragon_dsl.tvm.trace import apply
    from dragon_dsl.tvm.workload import load_workload

    target = tvm.target.Target(TARGET)
    mods = [apply(trace, load_workload(path)).mod for path, trace in cands]
    t0 = time.perf_counter()
    builder = LocalBuilder(timeout_sec=180)
    runner = LocalRunner(timeout_sec=60)
    built = builder.build([BuilderInput(m, target) for m in mods])
    inputs = [
        RunnerInput(b.artifact_path, "cpu", ArgInfo.from_prim_func(m["main"]))
        for b, m in zip(built, mods, strict=True)
        if b.error_msg is None
    ]
    results = [f.result() for f in runner.run(inputs)]
    seconds = time.perf_counter() - t0
    ok = sum(r.error_msg is None for r in results)
    return {"seconds": seconds, "n": len(cands), "statuses": {"ok": ok, "failed": len(cands) - ok}}


def per_minute(r: dict) -> float:
    return 60.0 * r["n"] / r["seconds"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=48)
    ap.add_argument("--cold", type=int, default=8, help="candidates for the cold baseline (fixed cost each)")
    ap.add_argument("--stock", type=int, default=None, help="candidates for MetaSchedule's stock pair (default: all)")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    cands = candidates(args.candidates)
    rows = {
        "warm pool": warm(cands, args.workers),
        "cold (fresh Engine per candidate)": cold(cands[: args.cold], args.workers),
        "MetaSchedule LocalBuilder+LocalRunner (no verify)": stock(cands[: args.stock or len(cands)]),
    }
    base = per_minute(rows["warm pool"])
    print(f"llvm {json.dumps(TARGET)}, small kernels from tests/data/traces/sampled.jsonl; build + verify + time\n")
    print("| way | candidates | seconds | candidates/min | warm is x faster | statuses |")
    print("|---|---|---|---|---|---|")
    for name, r in rows.items():
        print(
            f"| {name} | {r['n']} | {r['seconds']:.1f} | {per_minute(r):.0f} | {base / per_minute(r):.1f} | "
            f"{json.dumps(r['statuses'])} |"
        )
    print(f"\nwarm pool start-up (not in its rate): {rows['warm pool']['startup_s']:.1f} s")


if __name__ == "__main__":
    main()
