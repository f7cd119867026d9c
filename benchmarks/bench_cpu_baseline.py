"""The unscheduled baseline on a CPU target, timed only against verified too (prints figures; not a
timed test).

    python benchmarks/bench_cpu_baseline.py [--families rms_norm,softmax,conv2d_dilated] [--count 3]

`dragon suggest` and `dragon improve` on a CPU measure the program as written first: the floor an
answer must beat. That program is the verifier's reference itself (engine/reference.py: the same
arithmetic in the same order), so the engine times it without comparing it with its own outputs
(`Engine.baseline`). Measured in the same run, on one engine whose reference is computed once
beforehand: the same program measured as a candidate (an empty trace, verified against the
reference and then timed), and as the baseline. Both with `use_cache=False`, in alternating order.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--families", default="rms_norm,softmax,conv2d_dilated")
    ap.add_argument("--count", type=int, default=3, help="workloads per family")
    ap.add_argument("--seed", type=int, default=2027)
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()

    from dragon_dsl.corpus.generator import generate
    from dragon_dsl.engine import Engine

    specs = generate(args.count * len(args.families.split(",")), seed=args.seed, families=args.families.split(","))
    texts = [spec.build().script() for spec in specs]
    rows = []
    with tempfile.TemporaryDirectory() as cache, Engine("llvm", cache=str(Path(cache) / "results.sqlite")) as engine:
        engine.prepare(texts)  # the references, outside the comparison
        engine.measure(texts[0], [[[], []]], level="build")  # the workers started (the device's at first use)
        engine.baseline(texts[0], kind="unscheduled", level="time")
        for i, (spec, text) in enumerate(zip(specs, texts)):
            timed = {}
            for way in ("verified", "decided") if i % 2 == 0 else ("decided", "verified"):
                t0 = time.perf_counter()
                if way == "verified":
                    (r,) = engine.measure(text, [[[], []]], level="time", use_cache=False)
                else:
                    r = engine.baseline(text, kind="unscheduled", level="time", use_cache=False)
                timed[way] = (time.perf_counter() - t0, r.status.value, r.n_checked)
            rows.append(
                {
                    "workload": spec.name,
                    **{k: {"seconds": v[0], "status": v[1], "checked": v[2]} for k, v in timed.items()},
                }
            )
            v, d = timed["verified"][0], timed["decided"][0]
            print(
                f"{spec.name[:60]:60s} verified {v:6.2f} s  decided {d:6.2f} s  ratio {d / v:5.2f}x "
                f"({timed['verified'][1]}, {timed['decided'][1]})"
            )
    ratios = [r["decided"]["seconds"] / r["verified"]["seconds"] for r in rows]
    saved = [r["verified"]["seconds"] - r["decided"]["seconds"] for r in rows]
    print(
        f"median time, decided over verified: {statistics.median(ratios):.2f}x; "
        f"median saved {statistics.median(saved):.2f} s over {len(rows)} workloads"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
