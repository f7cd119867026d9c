"""MetaSchedule on the engine's warm pool: a Builder and a Runner for `ms.tune_tir`.

    engine = Engine({"kind": "llvm", "num-cores": 2})
    ms.tune_tir(mod, target, work_dir, max_trials_global=64,
                builder=EngineBuilder(engine), runner=EngineRunner(engine, workload=mod))

EngineBuilder builds MetaSchedule's scheduled modules in the engine's build workers
(what the stock LocalBuilder does in a fresh process pool per round). EngineRunner
times the built libraries on the engine's device worker; given the workload, it also
verifies each candidate against the reference first, and a candidate that fails
comes back to MetaSchedule as a run error. The engine's target must be the tuning
target (the builder checks the kind).

Both also accept a target (and `device=`) instead of an engine: they then share one
engine per (target, device), closed when the process exits.
"""

from __future__ import annotations

import atexit
import json
from typing import Optional

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.runner import PyRunner, PyRunnerFuture, RunnerResult

_SHARED: dict = {}


def _engine(engine_or_target, device: str):
    from dragon_dsl.engine.engine import Engine

    if isinstance(engine_or_target, Engine):
        return engine_or_target
    target = engine_or_target
    if hasattr(target, "export"):  # a tvm.target.Target
        target = {k: v for k, v in json.loads(json.dumps(target.export())).items() if v not in ("", None)}
    key = (json.dumps(target, sort_keys=True), device)
    if key not in _SHARED:
        _SHARED[key] = Engine(target, device=device)
    return _SHARED[key]


@atexit.register
def _close_shared() -> None:
    for engine in _SHARED.values():
        engine.close()
    _SHARED.clear()


@derived_object
class EngineBuilder(PyBuilder):
    def __init__(self, engine, device: str = "local"):
        super().__init__()
        self.engine = _engine(engine, device)

    def build(self, build_inputs):
        for inp in build_inputs:
            if str(inp.target.kind.name) != self.engine.target.kind:
                raise ValueError(f"EngineBuilder: the engine builds for {self.engine.target.kind}, "
                                 f"MetaSchedule asked for {inp.target.kind.name}")
        built = self.engine.build_modules([inp.mod for inp in build_inputs])
        return [BuilderResult(path, error) for path, error in built]


@derived_object
class EngineRunnerFuture(PyRunnerFuture):
    def __init__(self, run_secs: Optional[list], error: Optional[str]):
        super().__init__()
        self.run_secs = run_secs
        self.error = error

    def done(self) -> bool:
        return True

    def result(self) -> RunnerResult:
        return RunnerResult(self.run_secs, self.error)


@derived_object
class EngineRunner(PyRunner):
    def __init__(self, engine, workload=None, repeat: int = 5, number: Optional[int] = None,
                 min_repeat_ms: float = 5.0, device: str = "local"):
        super().__init__()
        self.engine = _engine(engine, device)
        self.workload = workload
        self.repeat, self.number, self.min_repeat_ms = repeat, number, min_repeat_ms

    def run(self, runner_inputs):
        measured = self.engine.run_artifacts(
            [str(inp.artifact_path) for inp in runner_inputs],
            [[a.as_json() for a in inp.args_info] for inp in runner_inputs],
            workload=self.workload, repeat=self.repeat, number=self.number, min_repeat_ms=self.min_repeat_ms)
        return [EngineRunnerFuture(secs, error) for secs, error in measured]
