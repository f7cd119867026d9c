"""The records the explainer reasons over: what TVM told us about a workload, a target and a schedule.

They are the TVM bridge's plain data (`dragon_dsl.tvm.facts`, filled by `dragon_dsl.tvm.inspect`),
named here for the rules, which read only these records and the checked program.
"""

from __future__ import annotations

from dragon_dsl.tvm.facts import (
    Access,
    Axis,
    BlockInfo,
    BufferInfo,
    Kernel,
    LoopState,
    ScheduleInfo,
    TargetInfo,
    WorkloadInfo,
    dtype_bytes,
)

__all__ = [
    "Access",
    "Axis",
    "BlockInfo",
    "BufferInfo",
    "Kernel",
    "LoopState",
    "ScheduleInfo",
    "TargetInfo",
    "WorkloadInfo",
    "dtype_bytes",
]
