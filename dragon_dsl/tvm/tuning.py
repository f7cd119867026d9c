"""MetaSchedule's tune_tir as every part of Little Dragon calls it (`tune`), and a budgeted
search whose best distinct schedules come back as Dragon scripts (`search_scripts`: the
fallback of the language server's and the model's suggestions).

    scripts = search_scripts(mod, tvm.target.Target("llvm"), trials=16, n=4,
                             *builder_and_runner(engine, workload=mod))
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import tempfile

MS_LOGGER = "tvm.s_tir.meta_schedule"


@contextlib.contextmanager
def _ms_logging(quiet: bool):
    """tune_tir's logger set-up lists the names of the handlers already on MetaSchedule's
    loggers and fails on a handler without a name ("'NoneType' object has no attribute
    'format'"), such as the capture handler pytest puts on every logger, or a host
    application's. Such handlers are taken off for the call and put back after it. `quiet`:
    only warnings reach the console (MetaSchedule's log files keep everything)."""
    loggers = [logging.getLogger(MS_LOGGER)] + [
        lg
        for name, lg in logging.Logger.manager.loggerDict.items()
        if name.startswith(MS_LOGGER + ".") and isinstance(lg, logging.Logger)
    ]
    detached = [(lg, h) for lg in loggers for h in list(lg.handlers) if not h.get_name()]
    for lg, h in detached:
        lg.removeHandler(h)
    root = logging.getLogger(MS_LOGGER)
    level = root.level
    if quiet:
        root.setLevel(logging.WARNING)  # tune_tir gives its console handler this logger's level
    try:
        yield
    finally:
        root.setLevel(level)
        for lg, h in detached:
            lg.addHandler(h)


def tune(mod, target, work_dir, *, quiet: bool = True, **kwargs):
    """`ms.tune_tir(mod, target, work_dir, **kwargs)`, robust to foreign log handlers; returns
    MetaSchedule's database. MetaSchedule's console log goes to standard error: standard output
    belongs to the caller (`dragon suggest --json` prints its JSON there)."""
    from tvm.s_tir import meta_schedule as ms

    from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics

    register_tensor_intrinsics()  # TuneContext imports every intrinsic: through here it takes seconds, not a minute
    # tune_tir makes its console handler on `ext://sys.stdout`, resolved while it runs
    with _ms_logging(quiet), contextlib.redirect_stdout(sys.stderr):
        return ms.tune_tir(mod, target, str(work_dir), **kwargs)


def search_scripts(
    mod, target, trials: int, n: int, builder, runner, *, workload_header=None, target_header=None, seed: int = 0
) -> list:
    """A budgeted MetaSchedule search: its `n` fastest distinct schedules as Dragon scripts,
    fastest first (the fallback of the language server's and the model's suggestions).

    `mod` is the workload IRModule, `target` a tvm.target.Target; the builder and runner are
    MetaSchedule's (EngineBuilder/EngineRunner, or the stock ones). A small budget searches
    with the random cost model (an untrained XGBoost model is no better in one round)."""
    from dragon_dsl import from_trace_json
    from dragon_dsl.tvm.trace import plain

    with tempfile.TemporaryDirectory(prefix="dragon-search-") as work_dir:
        db = tune(
            mod,
            target,
            work_dir,
            max_trials_global=trials,
            num_trials_per_iter=min(trials, 16),
            builder=builder,
            runner=runner,
            cost_model="random" if trials <= 64 else "xgb",
            seed=seed,
            num_tuning_cores=max(1, os.cpu_count() or 1),
        )
        records = list(db.get_all_tuning_records())
    scored = []
    for rec in records:
        secs = [float(s) for s in (rec.run_secs or [])]
        if secs and min(secs) < 1e9:  # MetaSchedule marks failed runs with 1e10
            scored.append((sum(secs) / len(secs), rec))
    scored.sort(key=lambda t: t[0])
    out, seen = [], set()
    for _secs, rec in scored:
        trace = plain(rec.trace.as_json(remove_postproc=False))
        key = json.dumps(trace, sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        try:
            out.append(from_trace_json(trace, workload=workload_header, target=target_header))
        except ValueError:  # a trace the codec refuses is not offered
            continue
        if len(out) >= n:
            break
    return out


def stock_builder_runner(kind: str = "local"):
    """MetaSchedule's own builder and runner: "local" (TVM's LocalBuilder and LocalRunner, one process
    per candidate) or "in-process" (TVM's build and run functions called in this process: for a
    process that is a worker already)."""
    from tvm.s_tir import meta_schedule as ms

    if kind == "in-process":
        return _in_process()
    if kind != "local":
        raise ValueError(f"unknown builder {kind!r}: expected 'local' or 'in-process'")
    return ms.builder.LocalBuilder(timeout_sec=300), ms.runner.LocalRunner(timeout_sec=120)


def _in_process():
    import tvm
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder, local_builder
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, PyRunner, local_runner

    @derived_object
    class InProcessBuilder(PyBuilder):
        def build(self, build_inputs):
            out = []
            for inp in build_inputs:
                try:
                    out.append(
                        BuilderResult(
                            local_builder.default_export(local_builder.default_build(inp.mod, inp.target, None)), None
                        )
                    )
                except Exception as exc:
                    out.append(BuilderResult(None, f"build failed: {exc}"))
            return out

    @derived_object
    class InProcessRunner(PyRunner):
        def run(self, runner_inputs):
            config = EvaluatorConfig._normalized(None)
            futures = []
            for inp in runner_inputs:
                try:
                    rt_mod = tvm.runtime.load_module(inp.artifact_path)
                    dev = tvm.runtime.device(inp.device_type, 0)
                    args = local_runner.default_alloc_argument(dev, tuple(a.as_json() for a in inp.args_info), 1)
                    costs = local_runner.default_run_evaluator(rt_mod, dev, config, args)
                    futures.append(local_runner.LocalRunnerFuture(res=costs, error_message=None))
                except Exception as exc:
                    futures.append(local_runner.LocalRunnerFuture(res=None, error_message=str(exc)))
            return futures

    return InProcessBuilder(), InProcessRunner()


_CAPTURE = None


def capture_callback(on_batch=None):
    """A MetaSchedule measure callback (for `tune(..., measure_callbacks=[...])`) that keeps every
    measured candidate in measurement order, as plain data: `.candidates` is a list of (trace JSON,
    build error or None, run error or None, run seconds or None); ON_BATCH, when given, gets each
    batch of such tuples as MetaSchedule measures it."""
    global _CAPTURE
    if _CAPTURE is None:
        from tvm.ir.utils import derived_object
        from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

        from dragon_dsl.tvm.trace import trace_json

        @derived_object
        class CaptureCandidates(PyMeasureCallback):
            def __init__(self, on_batch=None):
                super().__init__()
                self.candidates: list = []
                self.on_batch = on_batch

            def apply(self, task_scheduler, task_id, measure_candidates, builder_results, runner_results):
                batch = [
                    (
                        trace_json(c.sch),
                        b.error_msg,
                        r.error_msg,
                        None if r.run_secs is None else [float(s) for s in r.run_secs],
                    )
                    for c, b, r in zip(measure_candidates, builder_results, runner_results, strict=True)
                ]
                self.candidates.extend(batch)
                if self.on_batch is not None:
                    self.on_batch(batch)

        _CAPTURE = CaptureCandidates
    return _CAPTURE(on_batch)


def evolutionary_search(population_size: int, genetic_num_iters: int, init_min_unmeasured: int):
    """MetaSchedule's evolutionary search strategy with these settings."""
    from tvm.s_tir import meta_schedule as ms

    return ms.search_strategy.EvolutionarySearch(
        population_size=population_size, genetic_num_iters=genetic_num_iters, init_min_unmeasured=init_min_unmeasured
    )


def cost_model(kind: str, seed: int = 0):
    """MetaSchedule's cost model: "random" (seeded: unseeded, it draws from numpy's global state) or
    "xgb" (the name tune_tir takes)."""
    if kind == "random":
        from tvm.s_tir import meta_schedule as ms

        return ms.cost_model.RandomModel(seed=seed)
    if kind != "xgb":
        raise ValueError(f"unknown cost model {kind!r}: expected 'random' or 'xgb'")
    return "xgb"


def tvm_version() -> str:
    """The TVM release in use (its package version, or a source build's own)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("apache-tvm")
    except PackageNotFoundError:  # a source build
        import tvm

        return str(tvm.__version__)


def default_measure_callbacks() -> list:
    """MetaSchedule's default measure callbacks (add results to the database, remove failed builds'
    artifacts, update the cost model), to which a caller may add its own."""
    from tvm.s_tir import meta_schedule as ms

    return list(ms.measure_callback.MeasureCallback.create("default"))
