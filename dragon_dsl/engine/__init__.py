"""The verified measurement engine: build, verify and time schedule candidates on warm workers.

Public API (other parts of the product import exactly these names from `dragon_dsl.engine`,
never its modules; an import-linter contract holds it):

    from dragon_dsl.engine import Engine, Task, Result, Status
    with Engine("llvm") as engine:                       # or "cuda", a tag, a target dict
        results = engine.measure(workload, traces, level="time", seeds=3)
        base = engine.baseline(workload, kind="unscheduled")
    builder, runner = builder_and_runner(engine, workload=mod)   # for MetaSchedule's tune_tir
    summary = measure_batch("batch.jsonl", "results.jsonl", engine)  # dragon measure (batchfile.py)

Modules: result (data), targets, keys, cache (sqlite), signature/inputs/compare/
reference/run (the verifier), build and nvcc (the builder), timing, devices
(local and RPC), worker and pool (processes), batch (one call's state machine),
engine (the public object), metaschedule (EngineBuilder / EngineRunner for
`ms.tune_tir`). Importing this package does not import TVM; creating an Engine does.
The compile check the builder runs is the TVM bridge's (`dragon_dsl.tvm.compile`).
"""

from __future__ import annotations

from dragon_dsl.engine.batchfile import BatchError, Summary, engine_options, measure_batch, read_batch, read_results
from dragon_dsl.engine.cache import ResultsCache
from dragon_dsl.engine.compare import compare as compare_outputs
from dragon_dsl.engine.devices import gpu_lock
from dragon_dsl.engine.engine import Engine
from dragon_dsl.engine.pool import PoolError
from dragon_dsl.engine.result import EngineError, Result, Status, Task
from dragon_dsl.engine.targets import GPU_KINDS, TargetSpec, local_gpus, parse_device, resolve_target
from dragon_dsl.engine.timing import best, geomean, speedup
from dragon_dsl.levels import MEASURE_LEVELS


def builder_and_runner(engine, workload=None, device: str = "local", **timing) -> tuple:
    """MetaSchedule's builder and runner backed by ENGINE (an Engine, or a target to make one for):
    every trial is built, verified and timed by the engine (`engine.metaschedule`, which imports
    TVM; hence imported here on first use)."""
    from dragon_dsl.engine.metaschedule import builder_and_runner as make

    return make(engine, workload=workload, device=device, **timing)


def rpc_server_main(argv) -> int:
    """`dragon rpc-server ARGS`: TVM's RPC server whose sessions also serve the engine's CUDA timer
    (rpc_server.py; imported here on first use)."""
    from dragon_dsl.engine import rpc_server

    return rpc_server.main(argv)


def workload_hash(source) -> str:
    """The engine's identity of a workload (TVMScript text, a `.tvmscript` path or an IRModule): its
    structural hash as the results cache keys it (`keys.load`; raises WorkloadError)."""
    from dragon_dsl.engine import keys

    return keys.load(source).hash


__all__ = [
    "GPU_KINDS",
    "MEASURE_LEVELS",
    "BatchError",
    "Engine",
    "EngineError",
    "PoolError",
    "Result",
    "ResultsCache",
    "Status",
    "Summary",
    "TargetSpec",
    "Task",
    "best",
    "builder_and_runner",
    "compare_outputs",
    "engine_options",
    "geomean",
    "gpu_lock",
    "local_gpus",
    "measure_batch",
    "parse_device",
    "read_batch",
    "read_results",
    "resolve_target",
    "rpc_server_main",
    "speedup",
    "workload_hash",
]
