"""The evaluation's model rows when the model cannot run here: a machine without the decoder's
dependencies (the H200 machine has no xgrammar: answers are generated elsewhere) must give
"not available", never an unsolved task that would count against the model."""

from pathlib import Path

import pytest

from dragon_dsl.engine.targets import resolve_target
from dragon_dsl.eval import methods as m
from dragon_dsl.eval.discover import WorkloadEntry

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx_entry(tmp_path):
    ctx = m.Context(None, tmp_path, m.WallTimes(tmp_path / "cache" / "wall_times.json"), target=resolve_target("llvm"))
    path = ROOT / "tests/data/workloads/matmul_64.tvmscript"
    return ctx, WorkloadEntry(name="matmul_64", path=path, family="matmul")


@pytest.mark.parametrize("error, status, reason", [
    (ImportError("No module named 'xgrammar'"), "not_available", "the model cannot generate here"),
    (FileNotFoundError("no weights"), "not_available", "no model"),
    (RuntimeError("derailed"), "measured", "suggest() raised RuntimeError: derailed"),
], ids=["missing-dependency", "no-weights", "model-failure"])
def test_a_model_that_cannot_answer(ctx_entry, monkeypatch, error, status, reason):
    import dragon_model

    def suggest(**kw):
        raise error

    monkeypatch.setattr(dragon_model, "suggest", suggest)
    ctx, entry = ctx_entry
    row = m.model(ctx, entry, 1)
    assert row["status"] == status and reason in row["reason"]
    assert not list((ctx.out_dir / "model").glob("*.json")), "nothing stored: a later run generates again"
