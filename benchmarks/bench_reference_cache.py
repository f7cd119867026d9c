"""Storing a large reference computed in parts in the results cache, and finding it again (prints
figures; not a timed test).

    python benchmarks/bench_reference_cache.py [--m 7671] [--n 2560] [--rounds 2]

A big workload's reference is computed by several build workers at once, each writing one input
set's part. With a results cache, the engine keeps it for later runs. Two ways, in the same run,
on an RMSNorm (llvm), rounds alternating:
  * merged: every part read, merged and written again as one `.npz` (the way before
    `ResultsCache.put_reference_parts`), then, in a second engine, read back from the cache into
    that engine's work folder (`get_reference`);
  * parts: the parts copied file by file into the cache (`put_reference_parts`), and the second
    engine reading the folder where it is kept (`reference_path`).
Printed: the engine's own seconds for each step (the reference's computation is the same both ways
and is not counted).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=7671)
    ap.add_argument("--n", type=int, default=2560)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    from dragon_dsl.corpus.families import ALL_FAMILIES
    from dragon_dsl.engine import Engine, keys, reference
    from dragon_dsl.engine.cache import ResultsCache
    from dragon_dsl.engine.reference import config_key
    from dragon_dsl.tvm.workload import module_of

    text = module_of(ALL_FAMILIES["rms_norm"].build(m=args.m, n=args.n, rms=1)).script()
    wl = keys.load(text)
    config = config_key(3)

    def merged_store(cache, workload, conf, folder):  # the way before
        return cache.put_reference(workload, conf, reference.to_bytes(reference.load(folder)))

    def merged_find(engine):  # the way before: bytes into the work folder
        data = engine.cache.get_reference(wl.hash, config)
        path = engine._workdir / f"ref-{wl.hash}-3.npz"
        path.write_bytes(data)
        return str(path)

    timings = {"merged": {"store": [], "find": []}, "parts": {"store": [], "find": []}}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for way in ("merged", "parts") if r % 2 == 0 else ("parts", "merged"):
                cache_path = Path(tmp) / f"{way}-{r}" / "results.sqlite"
                stored = []
                original = ResultsCache.put_reference_parts

                def timed_store(cache, workload, conf, folder, way=way):
                    t0 = time.perf_counter()
                    ok = (
                        merged_store(cache, workload, conf, folder)
                        if way == "merged"
                        else original(cache, workload, conf, folder)
                    )
                    stored.append(time.perf_counter() - t0)
                    return ok

                ResultsCache.put_reference_parts = timed_store
                try:
                    with Engine("llvm", cache=str(cache_path)) as engine:
                        engine.prepare([text], seeds=3)
                finally:
                    ResultsCache.put_reference_parts = original
                with Engine("llvm", cache=str(cache_path)) as engine:
                    t0 = time.perf_counter()
                    path = merged_find(engine) if way == "merged" else engine._known_reference(wl, 3)
                    found = time.perf_counter() - t0
                    assert reference.load(path).sets, path
                timings[way]["store"].append(stored[0])
                timings[way]["find"].append(found)
                print(f"round {r} {way:6s} store {stored[0]:6.3f} s  find {found:6.3f} s", flush=True)
    for step in ("store", "find"):
        m, p = statistics.median(timings["merged"][step]), statistics.median(timings["parts"][step])
        print(f"{step}: merged {m:.3f} s, parts {p:.3f} s" + (f": {m / p:.1f}x less time" if p >= 1e-3 else ""))


if __name__ == "__main__":
    main()
