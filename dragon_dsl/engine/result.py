"""The engine's data: measurement levels, result statuses, one task, one result, and the
one error the engine raises (for misuse, never for a bad candidate).

Plain Python only (no TVM): front ends and the results cache read and write these.
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from dragon_dsl.levels import MEASURE_LEVELS  # the engine's part of the one check-level ladder


class EngineError(RuntimeError):
    """The engine cannot do what was asked (no device, a workload whose reference fails)."""


def level_rank(level: str) -> int:
    """build < verify < time; raises ValueError on an unknown level."""
    try:
        return MEASURE_LEVELS.index(level)
    except ValueError:
        raise ValueError(f"unknown level {level!r}: expected one of {', '.join(MEASURE_LEVELS)}") from None


class Status(str, enum.Enum):
    """What happened to one candidate. `str` values are what `to_json` writes."""

    OK = "ok"
    REPLAY_ERROR = "replay_error"  # the trace does not apply to the workload
    BUILD_ERROR = "build_error"  # tvm.compile, the GPU limits check or nvcc rejected it
    LAUNCH_ERROR = "launch_error"  # the kernel crashed, faulted or failed to launch
    TIMEOUT = "timeout"  # a stage ran past the engine's timeout; the worker was killed
    NUMERIC_MISMATCH = "numeric_mismatch"  # outputs differ from the reference beyond the dtype's tolerance
    UNWRITTEN_OUTPUT = "unwritten_output"  # part of an output kept its pre-filled NaN / sentinel

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Task:
    """One candidate to measure: a trace (plain trace JSON) on a workload, up to `level`.

    `workload` is TVMScript text, a path to a `.tvmscript` file or an IRModule.
    `seeds` is the number of random input sets the verifier compares (edge-value
    sets come on top). `repeat`/`number` follow TVM's time_evaluator; `number=None`
    lets the evaluator grow it until one repeat lasts `min_repeat_ms` (with `flush_l2`
    it means 1, so that every timed call follows a flush). `use_cache=False` measures
    again even when the results cache has an answer; the new result replaces it.
    """

    workload: Any
    trace: Any
    level: str = "time"
    seeds: int = 3
    repeat: int = 5
    number: int | None = None
    min_repeat_ms: float = 5.0
    flush_l2: bool = False
    use_cache: bool = True

    def __post_init__(self):
        level_rank(self.level)
        if self.seeds < 1:
            raise ValueError("seeds must be at least 1")
        if self.repeat < 1:
            raise ValueError("repeat must be at least 1")
        if self.number is not None and self.number < 1:
            raise ValueError("number must be at least 1 (or None for automatic)")

    def timing_config(self) -> dict:
        """The knobs that change a latency; part of what a cached timing must match."""
        return {
            "repeat": self.repeat,
            "number": self.number,
            "min_repeat_ms": self.min_repeat_ms,
            "flush_l2": self.flush_l2,
        }


@dataclass
class Result:
    """The outcome for one candidate. `level` is the stage the result was decided at:
    the requested level when the candidate passed, else the stage that failed."""

    status: Status
    message: str = ""
    latency_us: float | None = None
    latencies_us: list = field(default_factory=list)
    build_s: float | None = None
    run_s: float | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    n_checked: int = 0
    cached: bool = False
    level: str = "build"
    trace_hash: str = ""
    # the trace hash of the candidate whose build and measurement this result copies: its lowered
    # source is identical (Engine(dedupe_sources=True)); "" when measured itself
    duplicate_of: str = ""
    # how the latencies were taken: "blocked" (a CUDA kernel's device time behind a blocking kernel,
    # gpu_timer.py) or "evaluator" (TVM's time_evaluator); "" when not timed
    timer: str = ""

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_json(self) -> dict:
        out = asdict(self)
        out["status"] = self.status.value
        for key in ("max_abs_err", "max_rel_err", "latency_us"):
            value = out[key]
            if isinstance(value, float) and not math.isfinite(value):
                out[key] = str(value)  # JSON has no inf/nan; keep them readable
        return out

    @classmethod
    def from_json(cls, data: dict) -> Result:
        data = dict(data)
        data["status"] = Status(data["status"])
        for key in ("max_abs_err", "max_rel_err", "latency_us"):
            if isinstance(data.get(key), str):
                data[key] = float(data[key])
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


def failed_stage(status: Status, reached: str) -> str:
    """The stage a failure belongs to (used by the cache to decide what a stored failure answers)."""
    if status in (Status.REPLAY_ERROR, Status.BUILD_ERROR):
        return "build"
    if status in (Status.NUMERIC_MISMATCH, Status.UNWRITTEN_OUTPUT):
        return "verify"
    return reached
