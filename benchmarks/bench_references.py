"""The verifier's references of many small workloads: one build job per input set (the engine's way
for big workloads) against one job for all of a workload's sets (its way for small ones), same
workloads, same engine settings, one run. A labelling batch of 2,000 workloads, smallest first,
pays a reference per workload before its first candidate verifies.

    python benchmarks/bench_references.py --workloads 60 --workers 2

Printed: seconds for each way (a fresh engine each, warm before the clock starts) and the ratio;
the references must be identical (every set's inputs and outputs), else exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def small_workloads(n: int, seed: int) -> list:
    from dragon_dsl.corpus.generator import generate
    from dragon_dsl.tvm.workload import estimate_flops, workload_text

    out = []
    for spec in generate(8 * n, seed=seed):
        mod = spec.build()
        if 0 < estimate_flops(mod) <= 1e7:
            out.append(workload_text(mod))
        if len(out) == n:
            break
    return out


def run(texts: list, workers: int, split: bool) -> tuple:
    import dragon_dsl.engine.engine as engine_module
    from dragon_dsl.engine import Engine

    saved = engine_module.SMALL_REFERENCE_FLOPS
    engine_module.SMALL_REFERENCE_FLOPS = 0.0 if split else saved
    try:
        with Engine("llvm", workers=workers, cache=False) as engine:
            engine.prepare(texts[:1])  # workers started and warm
            t0 = time.perf_counter()
            engine.prepare(texts[1:])
            wall = time.perf_counter() - t0
            refs = [engine.reference(t) for t in texts[1:]]
    finally:
        engine_module.SMALL_REFERENCE_FLOPS = saved
    return wall, refs


def same(a, b) -> bool:
    import numpy as np

    if [s[0] for s in a.sets] != [s[0] for s in b.sets]:
        return False
    return all(
        set(x) == set(y) and all(np.array_equal(x[k], y[k], equal_nan=True) for k in x)
        for (_, xi, xo), (_, yi, yo) in zip(a.sets, b.sets)
        for x, y in ((xi, yi), (xo, yo))
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workloads", type=int, default=60)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    texts = small_workloads(args.workloads + 1, args.seed)
    split_s, split_refs = run(texts, args.workers, split=True)
    joined_s, joined_refs = run(texts, args.workers, split=False)
    identical = all(same(a, b) for a, b in zip(split_refs, joined_refs))
    n = len(texts) - 1
    print(f"{n} workloads of at most 1e7 FLOPs, {args.workers} build workers")
    print(f"  one job per input set:     {split_s:6.2f} s")
    print(f"  one job per workload:      {joined_s:6.2f} s   ({split_s / joined_s:.2f}x faster)")
    print(f"  references identical: {identical}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
