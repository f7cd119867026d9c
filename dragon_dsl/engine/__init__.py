"""The verified measurement engine: build, verify and time schedule candidates on warm workers.

Public API (other parts of the product call exactly this):

    from dragon_dsl.engine import Engine, Task, Result, Status
    with Engine("llvm") as engine:                       # or "cuda", a tag, a target dict
        results = engine.measure(workload, traces, level="time", seeds=3)
        base = engine.baseline(workload, kind="unscheduled")

Modules: result (data), targets, keys, cache (sqlite), signature/inputs/compare/
reference/run (the verifier), build and nvcc (the builder), timing, devices
(local and RPC), worker and pool (processes), batch (one call's state machine),
engine (the public object), metaschedule (EngineBuilder / EngineRunner for
`ms.tune_tir`). Importing this package does not import TVM; creating an Engine does.
"""

from __future__ import annotations

from dragon_dsl.engine.engine import Engine
from dragon_dsl.engine.result import LEVELS, EngineError, Result, Status, Task
from dragon_dsl.engine.timing import best, geomean, speedup

__all__ = ["LEVELS", "Engine", "EngineError", "Result", "Status", "Task", "best", "geomean", "speedup"]

