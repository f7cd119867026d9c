"""The verifier's reference program: the unscheduled workload as written against the one the engine
runs (`reference.reference_order`: reduction loops reordered for memory access, compiled for
`reference.reference_target`: the host's F16C and AVX2, FMA off), on one input set, one process,
the same workloads, one run; every output must be identical bit for bit.

    python benchmarks/bench_reference_program.py --max-flops 2e9 --out OUT

The workloads: those of the 1,000-candidate measure benchmark (bench_measure.py: every CUDA corpus
family) and the held-out real operators (`dragon workloads --held-out-operators`), each of at most
--max-flops (the program as written runs float16 at about 70 MFLOP/s). Printed: each workload's
seconds both ways and their ratio, the totals and their ratio, and the identical count;
OUT/bench_reference_program.json keeps it. Exit 1 when an output differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def workloads(max_flops: float) -> list:
    """(name, module) of the measure benchmark's workloads and the held-out real operators."""
    import bench_measure

    from dragon_dsl.corpus.families import HELD_OUT_OPERATORS
    from dragon_dsl.corpus.generator import WorkloadSpec
    from dragon_dsl.tvm.workload import estimate_flops, load_workload

    tmp = Path(tempfile.mkdtemp(prefix="bench-refprog-"))
    bench_measure.make_batch("cuda", 1000, 24, tmp, 0, tmp / "workloads")
    found = [(p.stem, load_workload(p)) for p in sorted((tmp / "workloads").glob("*.tvmscript"))]
    found += [(spec.name, spec.build()) for spec in (WorkloadSpec(f, p) for f, p in HELD_OUT_OPERATORS)]
    return [(name, mod) for name, mod in found if estimate_flops(mod) <= max_flops]


def one_set(mod, target: dict):
    """(seconds to compile and run input set 0, the outputs)."""
    import tvm

    from dragon_dsl.engine.inputs import input_sets
    from dragon_dsl.engine.run import call, make_tensors, read_outputs
    from dragon_dsl.engine.signature import signature

    args = signature(mod["main"])
    ((_, inputs),) = input_sets(args, 11, 3, only=[0])
    t0 = time.perf_counter()
    func = tvm.compile(mod, tvm.target.Target(target)).mod["main"]
    tensors = make_tensors(tvm.cpu(0), args, inputs)
    call(func, tvm.cpu(0), tensors)
    return time.perf_counter() - t0, read_outputs(args, tensors)


def main(argv=None) -> int:
    import numpy as np

    from dragon_dsl.engine.reference import reference_order, reference_target

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--max-flops", type=float, default=2e9)
    p.add_argument("--out", default="bench_reference_program_out")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    target = reference_target()
    for name, mod in workloads(args.max_flops):
        written_s, want = one_set(mod, {"kind": "llvm"})
        fast_s, got = one_set(reference_order(mod), target)
        same = set(got) == set(want) and all(
            np.ascontiguousarray(got[k]).view(np.uint8).tobytes()
            == np.ascontiguousarray(want[k]).view(np.uint8).tobytes()
            for k in want
        )
        rows.append(
            {
                "workload": name,
                "as_written_s": round(written_s, 3),
                "reference_s": round(fast_s, 3),
                "ratio": round(written_s / fast_s, 2),
                "identical": same,
            }
        )
        print(
            f"{name[:70]:70s} {written_s:8.2f} s {fast_s:8.2f} s {written_s / fast_s:7.1f}x "
            f"{'identical' if same else 'DIFFERENT'}",
            flush=True,
        )
    written = sum(r["as_written_s"] for r in rows)
    fast = sum(r["reference_s"] for r in rows)
    summary = {
        "workloads": len(rows),
        "target": target,
        "as_written_s": round(written, 2),
        "reference_s": round(fast, 2),
        "ratio": round(written / fast, 2) if fast else None,
        "identical": sum(r["identical"] for r in rows),
        "max_flops": args.max_flops,
    }
    (out / "bench_reference_program.json").write_text(json.dumps({**summary, "rows": rows}, indent=1))
    print(
        f"{len(rows)} workloads, one input set each (compile included): as written {written:.1f} s, "
        f"the reference program {fast:.1f} s ({summary['ratio']}x); identical outputs: "
        f"{summary['identical']} of {len(rows)}"
    )
    return 0 if summary["identical"] == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
