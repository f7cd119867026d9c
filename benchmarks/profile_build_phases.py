"""Where a CUDA candidate's build time goes, phase by phase, in one warm process (no GPU needed).

    python benchmarks/profile_build_phases.py DATABASE_DIR [--limit N]

DATABASE_DIR is a MetaSchedule database folder of one workload (e.g. one of the GPU evaluation's,
`benchmarks/gpu_host/eval.sh`, unpacked by `benchmarks/gpu_host/eval_state.sh`), read by
`dragon_dsl.tvm.database`. Its first N tuning records (best first) are built the way the engine's
builder builds them (`engine/build.py`), with each step timed on its own:

  schedule   the trace replayed on the workload (`dragon_dsl.tvm.compile.schedule`)
  checks     `dragon_dsl.tvm.compile.check_gpu` (stages left on the host, thread extents, TVM's VerifyGPUCode limits)
  compile    `tvm.compile` (its own lowering again, then host codegen; no nvcc without a GPU)
  nvcc       the CUDA source to a cubin (`compile_cubin`)
  export     `export_library` (writes the host object and links the shared library)

It prints each phase's total and share over the candidates that built, so that an optimisation of
the builder is chosen by measurement. The figures are one core's; the engine runs one build per
core at once.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = ("schedule", "checks", "compile", "nvcc", "export")


def profile_one(mod, trace, target, out_dir: Path) -> dict:
    """Seconds per phase of one build (the phases done before a failure), and the failure if any."""
    import tvm

    from dragon_dsl.engine.nvcc import compile_cubin
    from dragon_dsl.tvm import compile as B

    times: dict = {}

    def step(name, fn):
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            times[name] = time.perf_counter() - t0

    try:
        scheduled = step("schedule", lambda: B.schedule(mod, {"trace": trace}, target))
        step("checks", lambda: B.check_gpu(scheduled, target))
        executable = step("compile", lambda: tvm.compile(scheduled, target))
        source = [m for m in executable.mod.imports if m.kind == "cuda"][0].inspect_source()
        step("nvcc", lambda: compile_cubin(source, target))
        step("export", lambda: executable.export_library(str(out_dir / "mod.so")))
    except Exception as exc:
        return {"times": times, "failed": f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"}
    return {"times": times, "failed": None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("database", help="a MetaSchedule database folder of one workload")
    ap.add_argument("--limit", type=int, default=16, help="profile the first N records, best first (default 16)")
    ap.add_argument("--target", default="nvidia/nvidia-h100")
    args = ap.parse_args(argv)
    import tvm

    from dragon_dsl.tvm.database import DatabaseError, read_database

    try:
        records = read_database(args.database)[: args.limit]
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not records:
        print(f"error: {args.database}: no tuning records", file=sys.stderr)
        return 2
    target = tvm.target.Target(args.target)
    mod, traces = records[0].module, [r.trace for r in records]
    totals = {p: 0.0 for p in PHASES}
    built, failed = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        profile_one(mod, traces[0], target, Path(tmp))  # imports and first-use costs out of the figures
        for i, trace in enumerate(traces):
            r = profile_one(mod, trace, target, Path(tmp))
            if r["failed"]:
                failed.append(r["failed"])
                continue
            built += 1
            for p, s in r["times"].items():
                totals[p] += s
            print(f"candidate {i:3d}: " + "  ".join(f"{p} {r['times'][p]:6.2f}" for p in PHASES), flush=True)
    whole = sum(totals.values())
    print(
        f"\n{built} of {len(traces)} candidates built ({len(failed)} failed), {whole:.1f} s in all, "
        f"{whole / max(built, 1):.2f} s per candidate:"
    )
    for p in PHASES:
        print(f"  {p:9s} {totals[p]:8.2f} s  {100 * totals[p] / whole if whole else 0:5.1f}%")
    for f in sorted(set(failed)):
        print(f"  failed: {f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
