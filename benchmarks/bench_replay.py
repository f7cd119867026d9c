"""Replay of CUDA candidates (the engine's `replay` phase, CPU only): trace JSON applied to the
workload as the build workers apply it (`dragon_dsl.tvm.trace.apply`), with the cache_read guard
looking at every cache_read that names consumer blocks (each look replays the trace up to it: the
code before the guard was narrowed) against the narrowed guard, which looks only where TVM could
crash. Both on the same candidates, interleaved, in one run.

    python benchmarks/bench_replay.py [--candidates 80] [--workloads 16]

The candidates are bench_measure's batch (corpus traces of the CUDA corpus and variants of their
sampling decisions).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidates", type=int, default=80)
    ap.add_argument("--workloads", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)

    import bench_measure
    import tvm.s_tir.tensor_intrin  # noqa: F401 - registered once, outside the timings

    from dragon_dsl.tvm import trace as T
    from dragon_dsl.tvm.workload import load_workload

    tmp = Path(tempfile.mkdtemp())
    info = bench_measure.make_batch("cuda", a.candidates, a.workloads, tmp / "batch", 0, tmp / "wl")
    lines = [json.loads(x) for x in (tmp / "batch" / "batch.jsonl").read_text().splitlines()]
    narrowed = T._guarded
    modes = {
        "every cache_read looked at": lambda trace, mod=None: narrowed(trace),
        "narrowed guard (this version)": narrowed,
    }
    seconds = {m: 0.0 for m in modes}
    looks = {m: 0 for m in modes}
    mods: dict = {}
    try:
        for r in range(a.rounds):
            for ln in lines:
                mod = mods.get(ln["workload"]) or mods.setdefault(ln["workload"], load_workload(Path(ln["workload"])))
                for name in list(modes) if r % 2 == 0 else list(reversed(modes)):
                    T._guarded = modes[name]
                    T._CHECKED.clear()
                    looks[name] += len(modes[name](ln["trace"], mod))
                    t0 = time.perf_counter()
                    try:
                        T.apply(ln["trace"], mod)
                    except Exception:
                        pass
                    seconds[name] += time.perf_counter() - t0
    finally:
        T._guarded = narrowed
    n = a.rounds * len(lines)
    print(f"{len(lines)} CUDA candidates of {info['workloads']} workloads, {a.rounds} rounds")
    for name in modes:
        print(f"  {name:32s} {1000 * seconds[name] / n:7.1f} ms per replay, {looks[name] / n:.2f} looks each")
    base, now = seconds["every cache_read looked at"], seconds["narrowed guard (this version)"]
    print(f"replay speed-up: {base / now:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
