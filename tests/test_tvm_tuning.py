"""dragon_dsl.tvm.tuning: tune_tir as every part of Little Dragon calls it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.mark.slow
def test_tune_survives_unnamed_log_handlers_and_restores_them(tmp_path, capfd):
    """TVM's logger set-up fails on a handler without a name (pytest's capture handler is one):
    `tune` takes such handlers off for the call, puts them back, and restores the level."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics
    from dragon_dsl.tvm.tuning import MS_LOGGER, tune
    from dragon_dsl.tvm.workload import load_workload

    logger = logging.getLogger(MS_LOGGER)
    foreign = logging.NullHandler()
    assert foreign.get_name() is None
    logger.addHandler(foreign)
    level = logger.level
    try:
        mod = load_workload((DATA / "workloads" / "matmul_64.tvmscript").read_text())
        db = tune(
            mod,
            tvm.target.Target({"kind": "llvm", "num-cores": 1}),
            tmp_path,
            quiet=False,
            max_trials_global=1,
            num_trials_per_iter=1,
            cost_model="random",
            runner=ms.runner.LocalRunner(),
            seed=0,
            # its build worker imports every tensor intrinsic (default_build): in seconds through here
            builder=ms.builder.LocalBuilder(max_workers=1, initializer=register_tensor_intrinsics),
        )
        assert len(db.get_all_tuning_records()) == 1
        assert foreign in logger.handlers and logger.level == level
        assert "[INFO]" not in capfd.readouterr().out, "MetaSchedule's log must not reach standard output"
    finally:
        logger.removeHandler(foreign)
