"""Benchmark: nvcc's fixed cost per call, and what compiling several candidates' kernels in one
translation unit would save (issue 4: the CUDA builds are bound by nvcc). Prints figures; not a
timed test. Needs nvcc, no GPU.

    python benchmarks/bench_nvcc_batch.py [--workload FILE.tvmscript] [--kernels 1,4,8,16]

The kernel is TVM's CUDA source of the workload under dlight's default schedule (the engine's
build path: `tvm.compile`, then TVM's own nvcc driver to a cubin for sm_90a). For each count N
it compiles N copies with distinct kernel names, once as N nvcc calls (the baseline: what the
builder does now) and once as one call on one source holding TVM's preamble once and the N
kernels; it prints both times and their ratio. Measured 2026-12-01 on the 2-core CPU machine
(two other processes running): 1.0 s per kernel alone; 0.44 s each at 4 per call, 0.43 at 8,
0.36 at 16 (2.2x, 2.5x, 2.7x); for the evaluation's conv2d_CI256_CO24 and softmax_m7169 (80 and
170 lines: TVM's fp16 preamble is not in them) 8 kernels in one call took 1.28 s and 0.96 s
against 6.37 s and 5.55 s (5.0x, 5.8x). N sources in one nvcc call as N files saves nothing
(5.6 s for 8 either way): the fixed cost is per translation unit. Using it needs unique kernel
names per candidate (TVM names every kernel after its function, `main_kernel`) and the engine
calling each candidate's renamed entry: not done yet.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cuda_source(path: str, target) -> str:
    import tvm
    from tvm.s_tir import dlight as dl

    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(path)
    with target:
        mod = dl.ApplyDefaultSchedule(
            dl.gpu.Matmul(), dl.gpu.Reduction(), dl.gpu.GeneralReduction(), dl.gpu.Fallback()
        )(mod)
    executable = tvm.compile(mod, target)
    return next(m for m in executable.mod.imports if m.kind == "cuda").inspect_source()


def split(source: str) -> tuple:
    """(TVM's preamble, the kernels' declarations and bodies): the first `extern "C" __global__`."""
    at = source.find('extern "C" __global__')
    if at < 0:
        raise SystemExit("no __global__ kernel in the generated source")
    return source[:at], source[at:]


def main(argv=None) -> int:
    import re

    import tvm

    from dragon_dsl.engine.nvcc import compile_cubin, ensure_on_path

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default=str(ROOT / "dragon_dsl" / "examples" / "matmul_256.tvmscript"))
    p.add_argument("--kernels", default="1,4,8,16", help="kernels per nvcc call, comma-separated")
    args = p.parse_args(argv)
    counts = [int(x) for x in args.kernels.split(",") if x.strip()]
    if not counts or min(counts) < 1:
        p.error("--kernels: positive integers, e.g. 1,4,8")
    if ensure_on_path() is None:
        print("nvcc not found (PATH, /usr/local/cuda/bin)", file=sys.stderr)
        return 2
    target = tvm.target.Target("nvidia/nvidia-h100")
    source = cuda_source(args.workload, target)
    names = sorted(set(re.findall(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(", source)))
    preamble, kernels = split(source)

    def renamed(text: str, tag: str) -> str:
        for name in names:
            text = re.sub(rf"\b{name}\b", f"{name}_{tag}", text)
        return text

    compile_cubin(source, target)  # warm: the first call pays nvcc's own start-up on a cold disk
    print(f"{Path(args.workload).name}: {len(source.splitlines())} lines of CUDA, kernels {', '.join(names)}")
    print(f"{'kernels':>7}  {'N calls (s)':>11}  {'per kernel':>10}  {'1 call (s)':>10}  {'per kernel':>10}  ratio")
    for n in counts:
        t0 = time.perf_counter()
        for i in range(n):
            compile_cubin(renamed(source, f"s{i}"), target)
        separate = time.perf_counter() - t0
        merged = preamble + "".join(renamed(kernels, f"m{i}") for i in range(n))
        t0 = time.perf_counter()
        compile_cubin(merged, target)
        together = time.perf_counter() - t0
        print(
            f"{n:7d}  {separate:11.2f}  {separate / n:10.2f}  {together:10.2f}  {together / n:10.2f}  "
            f"{separate / together:.1f}x",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
