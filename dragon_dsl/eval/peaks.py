"""Device peaks for the roofline: a table of datasheet figures for GPUs, a measurement for CPUs.

GPU figures are NVIDIA's datasheet numbers (dense, no sparsity), keyed by a word of the
GPU's name (`nvidia-smi -L`). CUDA-core fp32 is used for float32 (the engine's verifier and
PyTorch run fp32 without TF32), tensor-core figures for float16/bfloat16/int8.

CPUs have no table: `measure_cpu()` times a float32 matrix product through numpy's BLAS
(best of 3, all cores numpy uses) and a large array copy (read + write bytes), and the
report says these are *measured* simple peaks, not datasheet ones. They are lower than
the theoretical peak, so fractions of the roofline on CPU are optimistic.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

TERA = 1e12


@dataclass(frozen=True)
class Peaks:
    device: str
    flops: dict  # dtype -> FLOP/s
    bytes_per_s: float
    source: str  # where the figures come from
    notes: list = field(default_factory=list)

    def flops_for(self, dtype: str) -> float:
        if dtype in self.flops:
            return self.flops[dtype]
        if dtype.startswith(("int", "uint")) and "int8" in self.flops:
            return self.flops["int8"]
        return self.flops["float32"]

    def to_json(self) -> dict:
        return asdict(self)


GPU_PEAKS = {
    "H200": Peaks(
        "NVIDIA H200",
        {
            "float32": 67 * TERA,
            "float16": 989 * TERA,
            "bfloat16": 989 * TERA,
            "float64": 34 * TERA,
            "int8": 1979 * TERA,
        },
        4.8 * TERA,
        "datasheet (H200 SXM, dense)",
    ),
    "H100": Peaks(
        "NVIDIA H100 SXM",
        {
            "float32": 67 * TERA,
            "float16": 989 * TERA,
            "bfloat16": 989 * TERA,
            "float64": 34 * TERA,
            "int8": 1979 * TERA,
        },
        3.35 * TERA,
        "datasheet (H100 SXM, dense)",
    ),
    "A100": Peaks(
        "NVIDIA A100",
        {
            "float32": 19.5 * TERA,
            "float16": 312 * TERA,
            "bfloat16": 312 * TERA,
            "float64": 9.7 * TERA,
            "int8": 624 * TERA,
        },
        2.04 * TERA,
        "datasheet (A100 80GB SXM, dense)",
    ),
}


def gpu_peaks(name: str) -> Peaks:
    """Peaks of a GPU by its name; ValueError when the table does not know it."""
    upper = name.upper()
    for key, peaks in GPU_PEAKS.items():
        if key in upper:
            return peaks
    raise ValueError(f"no peak figures for GPU {name!r}; known: {', '.join(GPU_PEAKS)}")


def measure_cpu(size: int = 1024, copy_mib: int = 64) -> Peaks:
    """Measured float32 FLOP/s (numpy sgemm) and copy bandwidth of this CPU (about a second)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    a @ b
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    flops = 2.0 * size**3 / best
    src = np.ones(copy_mib * (1 << 20) // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best_copy = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best_copy = min(best_copy, time.perf_counter() - t0)
    bandwidth = 2.0 * src.nbytes / best_copy
    import os

    return Peaks(
        f"CPU ({os.cpu_count()} cores)",
        {"float32": flops},
        bandwidth,
        f"measured: numpy float32 {size}^3 matmul (best of 3) and a {copy_mib} MiB copy",
        [
            "measured simple peaks, below the datasheet's: roofline fractions on CPU are optimistic",
            "dtypes other than float32 use the float32 figure",
        ],
    )


def peaks_for(target_kind: str, gpu_name: str | None, stored=None) -> Peaks:
    """GPU: the table. CPU: measured once, then read back from `stored` (a JSON file) when given, so
    that a rerun's roofline fractions use the same peaks."""
    if target_kind == "cuda":
        if not gpu_name:
            raise ValueError("a CUDA target needs a GPU name for its peaks")
        return gpu_peaks(gpu_name)
    if stored is not None and Path(stored).exists():
        data = json.loads(Path(stored).read_text(encoding="utf-8"))
        return Peaks(data["device"], data["flops"], data["bytes_per_s"], data["source"], data.get("notes", []))
    peaks = measure_cpu()
    if stored is not None:
        Path(stored).parent.mkdir(parents=True, exist_ok=True)
        Path(stored).write_text(json.dumps(peaks.to_json(), indent=1), encoding="utf-8")
    return peaks
