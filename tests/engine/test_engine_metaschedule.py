"""MetaSchedule's tune_tir on the engine's warm pool (EngineBuilder / EngineRunner)."""

from __future__ import annotations

from .engine_helpers import workload


def test_tune_tir_with_engine_builder_and_runner(llvm_engine, tmp_path):
    import tvm

    from dragon_dsl.engine.metaschedule import EngineBuilder, EngineRunner
    from dragon_dsl.tvm.tuning import tune  # tune_tir, robust to pytest's unnamed log handlers
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(workload("matmul_64"))
    database = tune(
        mod,
        tvm.target.Target(llvm_engine.target.spec),
        tmp_path,
        max_trials_global=8,
        num_trials_per_iter=8,
        builder=EngineBuilder(llvm_engine),
        runner=EngineRunner(llvm_engine, workload=mod),
        num_tuning_cores=2,
        seed=1,
    )
    records = database.get_all_tuning_records()
    assert len(records) == 8
    timed = [[float(t) for t in r.run_secs] for r in records if r.run_secs is not None]
    assert timed and all(len(ts) == 5 and all(0 < t < 1e6 for t in ts) for ts in timed)
    assert database.query_schedule(mod, tvm.target.Target(llvm_engine.target.spec), workload_name="main") is not None


def test_paired_builder_measures_each_round_in_one_call(llvm_engine, tmp_path):
    """builder_and_runner: the builder measures the round (reference beside the builds); the runner
    answers from those measurements, and MetaSchedule's artifact clean-up finds its folders."""
    import tvm

    from dragon_dsl.engine.metaschedule import builder_and_runner
    from dragon_dsl.tvm.tuning import tune
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(workload("matmul_64"))
    builder, runner = builder_and_runner(llvm_engine, workload=mod, repeat=3)
    database = tune(
        mod,
        tvm.target.Target(llvm_engine.target.spec),
        tmp_path,
        max_trials_global=8,
        num_trials_per_iter=8,
        builder=builder,
        runner=runner,
        num_tuning_cores=2,
        seed=1,
    )
    records = database.get_all_tuning_records()
    assert len(records) == 8
    timed = [[float(t) for t in r.run_secs] for r in records if r.run_secs is not None and float(r.run_secs[0]) < 1e9]
    assert timed and all(len(ts) == 3 and all(0 < t < 1 for t in ts) for ts in timed)
    assert runner.measured == {}  # every measurement was handed to MetaSchedule
    # a module measured once is answered by the results cache the second time
    first = llvm_engine.measure_modules(str(workload("matmul_64")), [mod], repeat=3)
    again = llvm_engine.measure_modules(str(workload("matmul_64")), [mod], repeat=3)
    assert first[0].ok and not first[0].cached and first[0].n_checked == 5
    assert again[0].cached and again[0].latency_us == first[0].latency_us
