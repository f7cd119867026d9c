"""The fallback when no model candidate verifies: a budgeted MetaSchedule search through the
measurement engine (`search`)."""

from __future__ import annotations


def search(workload_text: str, target_spec, trials: int, n: int = 4, engine=None) -> list[str]:
    """A budgeted MetaSchedule search through the measurement engine (its runner verifies every
    trial); its best distinct schedules as scripts, fastest first."""
    from dragon_dsl.engine import Engine, builder_and_runner
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.tuning import search_scripts
    from dragon_dsl.tvm.workload import load_workload

    mod = load_workload(workload_text)
    own = engine is None
    engine = engine or Engine(target_spec, cache=False)
    try:
        return search_scripts(mod, tvm_target(target_spec), trials, n, *builder_and_runner(engine, workload=mod))
    finally:
        if own:
            engine.close()
