"""The verifier's host-side cost per candidate (prints figures; not a timed test).

    python benchmarks/bench_verify.py [--sizes 1,4,16] [--repeat 3]

For float32 outputs of N million values, measured in the same run:
  1. comparison: the exact float64 rule (`compare.compare`, what every candidate paid
     until 2026-12-01) against the float32 fast path (`compare.Expected`, whose verdict is
     the exact rule's: property-tested in tests/engine/test_engine_data.py), and that fast
     path as it was until 2026-12-05 (`Float64Prepared`: float32 arrays of the tolerance and
     of 1 / max(|want|, rtol * scale) prepared through float64 once per output, kept beside
     a float32 copy of the output; today's compares chunk by chunk and keeps nothing);
  2. staging: fresh tensors per input set (`run.make_tensors`: inputs uploaded, outputs
     filled on the host) against `run.Staged` (inputs kept on the device, outputs refilled
     by a device copy), on the CPU device here (on a GPU the uploads cross PCIe).
One candidate's verification makes 5 comparisons and 5 stagings (3 random sets + 2 edge).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Float64Prepared:
    """`compare.Expected`'s fast path as it was until 2026-12-05, for the comparison only."""

    def __init__(self, want, rtol=1e-4, margin=1.0 - 1e-6):
        self.want32 = want.astype(np.float32)
        mag = np.abs(self.want32)
        scale = float(mag.max()) or 1.0
        self.tol = (rtol * margin * (scale + mag.astype(np.float64))).astype(np.float32)
        self.inv = (1.0 / np.maximum(mag.astype(np.float64), rtol * scale)).astype(np.float32)

    def kept_bytes(self) -> int:
        return self.want32.nbytes + self.tol.nbytes + self.inv.nbytes

    def compare(self, got):
        err = np.abs(got.astype(np.float32, copy=False) - self.want32)
        assert bool(np.all(err <= self.tol))
        return float(err.max()), float(np.multiply(err, self.inv).max())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,4,16", help="millions of float32 values per output")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import tvm

    from dragon_dsl.engine.compare import Expected, compare
    from dragon_dsl.engine.inputs import input_sets
    from dragon_dsl.engine.reference import Reference
    from dragon_dsl.engine.run import Staged, make_tensors
    from dragon_dsl.engine.signature import Arg

    rows, prepared_rows = [], []
    for m in (int(x) for x in args.sizes.split(",")):
        n = m << 20
        rng = np.random.default_rng(m)
        want = rng.uniform(-1, 1, n).astype(np.float32)
        got = (want + rng.uniform(-1e-6, 1e-6, n)).astype(np.float32)
        exact = best_of(lambda: compare(got, want, "float32"), args.repeat)
        prepared = Expected(want, "float32")
        prep = best_of(lambda: Expected(want, "float32"), args.repeat)
        fast = best_of(lambda: prepared.compare(got), args.repeat)
        assert prepared.compare(got).bad == compare(got, want, "float32").bad == 0
        before = Float64Prepared(want)
        prep_before = best_of(lambda: Float64Prepared(want), args.repeat)
        fast_before = best_of(lambda: before.compare(got), args.repeat)
        assert before.compare(got)[0] == prepared.compare(got).max_abs

        a = [
            Arg("A", (n,), "float32", "input"),
            Arg("B", (n,), "float32", "input"),
            Arg("C", (n,), "float32", "output"),
        ]
        sets = [(name, values, {"C": values["A"]}) for name, values in input_sets(a, 1, 3)]
        ref = Reference(a, sets)
        dev = tvm.cpu(0)
        fresh = best_of(lambda: make_tensors(dev, a, sets[0][1]), args.repeat)
        staged = Staged(dev, ref)
        staged.tensors(0)
        reuse = best_of(lambda: staged.tensors(0), args.repeat)
        rows.append((m, exact, fast, prep, fresh, reuse))
        prepared_rows.append((m, fast_before, fast, prep_before, prep, before.kept_bytes()))

    print(
        "| M values | exact compare ms | fast compare ms | ratio | prepare once ms | fresh tensors ms "
        "| staged tensors ms | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for m, exact, fast, prep, fresh, reuse in rows:
        print(
            f"| {m} | {exact * 1e3:.1f} | {fast * 1e3:.1f} | {exact / fast:.1f}x | {prep * 1e3:.1f} "
            f"| {fresh * 1e3:.1f} | {reuse * 1e3:.1f} | {fresh / reuse:.1f}x |"
        )
    print("\nThe fast path as it was until 2026-12-05 against today's, same outputs:\n")
    print(
        "| M values | compare ms, before | today | ratio | prepare once ms, before | today | ratio "
        "| MB kept per output, before | today |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for m, fb, f, pb, p, kept in prepared_rows:
        print(
            f"| {m} | {fb * 1e3:.1f} | {f * 1e3:.1f} | {fb / f:.1f}x | {pb * 1e3:.1f} | {p * 1e3:.1f} "
            f"| {pb / p:.1f}x | {kept / 2**20:.0f} | 0 |"
        )
    m, exact, fast, prep, fresh, reuse = rows[-1]
    print(
        f"\nper candidate at {m}M values (5 input sets): {5 * (exact + fresh) * 1e3:.0f} ms before, "
        f"{5 * (fast + reuse) * 1e3:.0f} ms now (+ {prep * 5e3:.0f} ms once per workload)"
    )


if __name__ == "__main__":
    main()
