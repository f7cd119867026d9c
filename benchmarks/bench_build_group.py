"""Benchmark: grouped builds (`Engine(build_group=N)`: candidates of one workload compiled as one
library, one nvcc call per group) against one build per candidate (issue 4). Prints figures and
the ratio, measured in the same run; not a timed test.

    python benchmarks/bench_build_group.py [--target cuda|llvm] [--group 8] [--workers 2] [--level build]
        [--database DIR --workload FILE.tvmscript]

Candidates: every MetaSchedule sample of the target in tests/data/traces/sampled.jsonl (2-8 per
workload, 29 workloads), or with --database the tuning records of a MetaSchedule database of
one workload (a 64-trial search: the candidates of a tuning round, the case issue 4 measures;
e.g. a database of an evaluation's OUT/metaschedule folder). `--level build` needs no GPU (on a machine without one the builder runs
nvcc itself; on a GPU machine TVM does, through its callback); `verify` and `time` need the
target's device. Each way uses a fresh Engine with the results cache off, started before the
clock, and the results must agree candidate by candidate (status and stage).

Measured 2026-12-01 on the 2-core CPU machine (level build, so nvcc runs here; another process
generating on one core): the 135 sampled CUDA candidates 1.38x and 1.58x (1 worker); 64-trial
MetaSchedule databases of the H200 evaluation, 2 workers: softmax_m7169_n128 31.0 s -> 12.2 s
(2.55x), conv2d_CI256_CO24 72.1 s -> 64.6 s (1.12x: long unrolled kernels, nvcc's time grows
with the code, not the call); the 221 llvm candidates 1.06x (LLVM's codegen dominates). Every
run: results agree for every candidate. On the H200 the same comparison is still to run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = {"cuda": "nvidia/nvidia-h100", "llvm": {"kind": "llvm", "num-cores": 2}}


def candidates(target) -> dict:
    """{workload path: [trace, ...]} of the target's samples."""
    out: dict = defaultdict(list)
    with open(ROOT / "tests" / "data" / "traces" / "sampled.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["target"] == target:
                out[str(ROOT / "tests" / "data" / "workloads" / f"{rec['workload']}.tvmscript")].append(rec["trace"])
    return dict(out)


def database_candidates(folder: str, workload: str) -> dict:
    """{workload: [trace, ...]} of a MetaSchedule database's tuning records."""
    with open(Path(folder) / "database_tuning_record.json", encoding="utf-8") as f:
        return {workload: [json.loads(line)[1][0] for line in f if line.strip()]}


def measure(target, cands: dict, group: int, workers: int, level: str) -> tuple:
    from dragon_dsl.engine import Engine, Task

    engine = Engine(target, workers=workers, cache=False, build_group=group)
    try:
        engine.measure(next(iter(cands)), [[[], []]], level="build")  # the workers are up
        tasks = [Task(w, t, level=level, use_cache=False) for w, traces in cands.items() for t in traces]
        t0 = time.perf_counter()
        results = engine.run(tasks)
        return time.perf_counter() - t0, results, engine.stats()["build_jobs"] - 1
    finally:
        engine.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=sorted(TARGETS), default="cuda")
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--level", choices=("build", "verify", "time"), default="build")
    ap.add_argument("--database", help="a MetaSchedule database folder of one workload (with --workload)")
    ap.add_argument("--workload", help="the workload of --database (TVMScript)")
    args = ap.parse_args(argv)
    if bool(args.database) != bool(args.workload):
        ap.error("--database and --workload go together")
    target = TARGETS[args.target]
    cands = database_candidates(args.database, args.workload) if args.database else candidates(target)
    n = sum(len(v) for v in cands.values())
    print(f"{n} {args.target} candidates of {len(cands)} workloads, level {args.level}, {args.workers} build workers")
    alone_s, alone, alone_jobs = measure(target, cands, 1, args.workers, args.level)
    group_s, grouped, group_jobs = measure(target, cands, args.group, args.workers, args.level)
    same = [(a.status, a.level) == (g.status, g.level) for a, g in zip(alone, grouped)]
    print(
        f"one build per candidate: {alone_s:7.1f} s  {alone_jobs:4d} build jobs  {60 * n / alone_s:7.1f} candidates/min"
    )
    print(
        f"groups of {args.group:<2d}           : {group_s:7.1f} s  {group_jobs:4d} build jobs  "
        f"{60 * n / group_s:7.1f} candidates/min"
    )
    print(f"ratio: {alone_s / group_s:.2f}x less wall time grouped; results agree for {sum(same)}/{n} candidates")
    print("statuses:", dict(Counter(r.status.value for r in grouped)))
    for a, g, ok in zip(alone, grouped, same):
        if not ok:
            print(f"  differs: alone {a.status.value} ({a.message[:80]}), grouped {g.status.value} ({g.message[:80]})")
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
