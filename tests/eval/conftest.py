"""Fixtures shared by the evaluation's tests."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx_entry(tmp_path):
    """An llvm evaluation context without an engine, and the matmul_64 workload's entry."""
    from dragon_dsl.engine.targets import resolve_target
    from dragon_dsl.eval import methods as m
    from dragon_dsl.eval.discover import WorkloadEntry

    ctx = m.Context(None, tmp_path, m.WallTimes(tmp_path / "cache" / "wall_times.json"), target=resolve_target("llvm"))
    path = ROOT / "tests/data/workloads/matmul_64.tvmscript"
    return ctx, WorkloadEntry(name="matmul_64", path=path, family="matmul")
