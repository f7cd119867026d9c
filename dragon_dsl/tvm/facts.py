"""Plain data: what TVM told us about a workload, a target and a replayed schedule.

`dragon_dsl.tvm.inspect` fills these records from TVM; their readers (the explainer's rules,
`dragon_dsl.explain.rules`) read only these records and the checked program, so they are plain
Python, need no TVM and are easy to test. No TVM import here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Axis:
    """One iteration variable of a block: its name in the workload, extent and kind."""

    name: str
    extent: int
    kind: str  # "spatial", "reduction" or "other"


@dataclass(frozen=True)
class Access:
    """A buffer a block reads or writes, and the block axes that appear in its indices."""

    buffer: str
    axes: tuple[str, ...]


@dataclass
class BlockInfo:
    name: str
    axes: list[Axis]
    reads: list[Access]
    writes: list[Access]
    dtype: str  # dtype of the first written buffer


@dataclass(frozen=True)
class BufferInfo:
    name: str
    shape: tuple[int, ...]
    dtype: str
    scope: str = "global"

    @property
    def elements(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def bytes(self) -> int:
        return self.elements * dtype_bytes(self.dtype)


@dataclass
class WorkloadInfo:
    blocks: dict[str, BlockInfo]  # in program order
    params: list[BufferInfo]  # the function's argument buffers
    intermediates: dict[str, BufferInfo]  # buffers allocated inside the function
    flops: float  # TVM's estimate (s_tir.analysis.estimate_tir_flops)


@dataclass(frozen=True)
class LoopState:
    """A loop as TVM holds it: its loop variable's name, extent, kind and thread tag."""

    name: str
    extent: int | None  # None when not a constant
    kind: str  # "serial", "parallel", "vectorized", "unrolled", "thread"
    thread: str | None = None
    axis_kinds: tuple[str, ...] = ()  # kinds of the block axes this loop drives (spatial/reduction)
    axes: tuple[str, ...] = ()  # names of those block axes


@dataclass
class Kernel:
    """One GPU kernel launch: extents of its thread axes (blockIdx.x, threadIdx.x, vthread...)."""

    axes: dict[str, int]

    def product(self, prefix: str) -> int:
        n = 1
        for tag, ext in self.axes.items():
            if tag.startswith(prefix):
                n *= ext
        return n


@dataclass
class ScheduleInfo:
    ok: bool
    error: str | None = None
    # script variable -> what it denoted when an instruction first used it (a LoopState or a block name)
    first_seen: dict[str, object] = field(default_factory=dict)
    # script variable -> what it denotes after the whole script (absent: gone, e.g. a split loop)
    final: dict[str, object] = field(default_factory=dict)
    kernels: list[Kernel] = field(default_factory=list)
    allocations: list[BufferInfo] = field(default_factory=list)  # after buffer compaction


@dataclass(frozen=True)
class TargetInfo:
    kind: str  # "cuda", "llvm", ...
    text: str  # how the script's header spells it
    cores: int | None = None
    max_threads_per_block: int | None = None
    max_shared_memory_per_block: int | None = None
    warp_size: int | None = None
    registers_per_block: int | None = None

    @property
    def gpu(self) -> bool:
        return self.kind in ("cuda", "rocm", "vulkan", "metal", "opencl", "webgpu")


_DTYPE_BITS = {"bool": 8}


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a TVM dtype string ("float32", "int8", "float16x4", "bool")."""
    base, _, lanes = dtype.partition("x")
    if base in _DTYPE_BITS:
        bits = _DTYPE_BITS[base]
    else:
        m = re.match(r"[a-z]+?(\d+)", base)
        bits = int(m.group(1)) if m else 32
    return max(1, bits // 8) * (int(lanes) if lanes.isdigit() else 1)
