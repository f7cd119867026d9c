"""MetaSchedule on the engine's warm pool: a Builder and a Runner for `ms.tune_tir`.

    engine = Engine({"kind": "llvm", "num-cores": 2})
    runner = EngineRunner(engine, workload=mod)
    ms.tune_tir(mod, target, work_dir, max_trials_global=64,
                builder=EngineBuilder(engine, runner=runner), runner=runner)

EngineBuilder builds MetaSchedule's scheduled modules in the engine's build workers
(what the stock LocalBuilder does in a fresh process pool per round). EngineRunner
times the built libraries on the engine's device worker; given the workload, it also
verifies each candidate against the reference first, and a candidate that fails
comes back to MetaSchedule as a run error. The engine's target must be the tuning
target (the builder checks the kind).

Paired (`EngineBuilder(engine, runner=runner)`, the runner knowing the workload), the
builder measures the whole round in one engine call (`Engine.measure_modules`): the
reference is computed beside the builds, and on a GPU each candidate is verified and
timed as soon as it is built, instead of after the last build of the round. The builder
then hands MetaSchedule an empty folder per built candidate (MetaSchedule deletes it
after the run) and the runner answers from the measurements.

Both also accept a target (and `device=`) instead of an engine: they then share one
engine per (target, device), closed when the process exits.
"""

from __future__ import annotations

import atexit
import json

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.runner import PyRunner, PyRunnerFuture, RunnerResult

_SHARED: dict = {}


def _engine(engine_or_target, device: str):
    from dragon_dsl.engine.engine import Engine

    if isinstance(engine_or_target, Engine):
        return engine_or_target
    target = engine_or_target
    if hasattr(target, "export"):  # a tvm.target.Target (its export is TVM's Map, which json cannot write)
        from dragon_dsl.tvm.trace import plain

        target = {k: v for k, v in plain(target.export()).items() if v not in ("", None)}
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
    def __init__(self, engine, device: str = "local", runner: EngineRunner | None = None):
        super().__init__()
        self.engine = _engine(engine, device)
        self.runner = runner if runner is not None and runner.workload is not None else None

    def build(self, build_inputs):
        for inp in build_inputs:
            if str(inp.target.kind.name) != self.engine.target.kind:
                raise ValueError(
                    f"EngineBuilder: the engine builds for {self.engine.target.kind}, "
                    f"MetaSchedule asked for {inp.target.kind.name}"
                )
        if self.runner is not None:
            return self._measure(build_inputs)
        built = self.engine.build_modules([inp.mod for inp in build_inputs])
        return [BuilderResult(path, error) for path, error in built]

    def _measure(self, build_inputs):
        r = self.runner
        results = self.engine.measure_modules(
            r.workload,
            [inp.mod for inp in build_inputs],
            repeat=r.repeat,
            number=r.number,
            min_repeat_ms=r.min_repeat_ms,
        )
        out = []
        for result in results:
            if result.level == "build" and not result.ok:
                out.append(BuilderResult(None, f"{result.status.value}: {result.message}"))
                continue
            folder = self.engine._next_dir("ms")
            folder.mkdir(parents=True)
            receipt = str(folder / "measured")
            r.measured[receipt] = (
                ([t * 1e-6 for t in result.latencies_us], None)
                if result.ok
                else (None, f"{result.status.value}: {result.message}")
            )
            out.append(BuilderResult(receipt, None))
        return out


@derived_object
class EngineRunnerFuture(PyRunnerFuture):
    def __init__(self, run_secs: list | None, error: str | None):
        super().__init__()
        self.run_secs = run_secs
        self.error = error

    def done(self) -> bool:
        return True

    def result(self) -> RunnerResult:
        return RunnerResult(self.run_secs, self.error)


@derived_object
class EngineRunner(PyRunner):
    def __init__(
        self,
        engine,
        workload=None,
        repeat: int = 5,
        number: int | None = None,
        min_repeat_ms: float = 5.0,
        device: str = "local",
    ):
        super().__init__()
        self.engine = _engine(engine, device)
        self.workload = workload
        self.repeat, self.number, self.min_repeat_ms = repeat, number, min_repeat_ms
        self.measured: dict = {}  # receipt path -> (seconds, error): what a paired builder measured

    def run(self, runner_inputs):
        paths = [str(inp.artifact_path) for inp in runner_inputs]
        todo = [i for i, p in enumerate(paths) if p not in self.measured]
        answers = (
            dict(
                zip(
                    todo,
                    self.engine.run_artifacts(
                        [paths[i] for i in todo],
                        [[a.as_json() for a in runner_inputs[i].args_info] for i in todo],
                        workload=self.workload,
                        repeat=self.repeat,
                        number=self.number,
                        min_repeat_ms=self.min_repeat_ms,
                    ),
                )
            )
            if todo
            else {}
        )
        out = []
        for i, path in enumerate(paths):
            secs, error = self.measured.pop(path) if i not in answers else answers[i]
            out.append(EngineRunnerFuture(secs, error))
        return out


def builder_and_runner(engine, workload=None, device: str = "local", **timing) -> tuple:
    """A paired EngineBuilder and EngineRunner (see the module docstring): what `tune_tir` should get."""
    runner = EngineRunner(engine, workload=workload, device=device, **timing)
    return EngineBuilder(runner.engine, runner=runner), runner
