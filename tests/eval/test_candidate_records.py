"""What the evaluation records beside each candidate for the report's honesty figures: the origin of
each model candidate (`suggest.with_origins`: the model's own or a tensor-core sample) and dlight's
script in dlight's row (the first answers that copy it)."""

import json
import re
from pathlib import Path

import pytest

from dragon_dsl.engine import Result, Status
from dragon_dsl.engine.targets import resolve_target
from dragon_dsl.eval import methods as m
from dragon_dsl.eval import metrics as M
from dragon_dsl.eval.discover import WorkloadEntry

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ctx_entry(tmp_path):
    ctx = m.Context(None, tmp_path, m.WallTimes(tmp_path / "cache" / "wall_times.json"), target=resolve_target("llvm"))
    path = ROOT / "tests/data/workloads/matmul_64.tvmscript"
    return ctx, WorkloadEntry(name="matmul_64", path=path, family="matmul")


def test_each_model_candidate_records_its_origin(ctx_entry, monkeypatch):
    import dragon_model

    def suggest(**kw):
        raise AssertionError("with_origins is asked where the model offers it")

    suggest.with_origins = lambda **kw: [("not a script", "model"), ("nor this", "tensor_core")]
    monkeypatch.setattr(dragon_model, "suggest", suggest)
    ctx, entry = ctx_entry
    row = m.model(ctx, entry, 2)
    assert [c["origin"] for c in row["candidates"]] == ["model", "tensor_core"]
    stored = json.loads(m.suggestions_path(ctx, entry, 2, "construction", None).read_text())
    assert stored["origins"] == ["model", "tensor_core"]
    again = m.model(ctx, entry, 2)  # from the stored answers
    assert [c["origin"] for c in again["candidates"]] == ["model", "tensor_core"]


def test_answers_stored_without_origins_count_as_the_models_own(ctx_entry, monkeypatch):
    import dragon_model

    monkeypatch.setattr(dragon_model, "suggest", lambda **kw: ["not a script"])  # no with_origins
    ctx, entry = ctx_entry
    row = m.model(ctx, entry, 1)
    assert "origin" not in row["candidates"][0]
    assert json.loads(m.suggestions_path(ctx, entry, 1, "construction", None).read_text())["origins"] is None
    assert M.is_own(row["candidates"][0]) and not M.is_own({"origin": "tensor_core"})


def test_the_model_names_each_candidates_origin():
    from dragon_model.api import candidate_origin
    from dragon_model.generate import Generation

    assert candidate_origin(Generation(body="x")) == "model"
    assert candidate_origin(Generation(body="x", completed_from="y")) == "completed"
    assert candidate_origin(Generation(body="x", completed_from="y", sample=3)) == "tensor_core"


class _DlightEngine:
    target = resolve_target("cuda")

    def baseline(self, workload, kind="unscheduled", level="time", **timing):
        return Result(Status.OK, latency_us=10.0, latencies_us=[10.0], level=level, cached=True)


def test_dlights_row_records_its_script(tmp_path):
    """dlight's row carries dlight's schedule as a script; the same schedule written by a model with
    other names and a comment is the same script for the report."""
    ctx = m.Context(_DlightEngine(), tmp_path, m.WallTimes(tmp_path / "walls.json"))
    entry = WorkloadEntry(name="matmul_64", path=ROOT / "tests/data/workloads/matmul_64.tvmscript", family="mm")
    row = m.baseline(ctx, entry, "dlight")
    script = row["candidates"][0]["script"]
    assert script.startswith('workload "matmul_64.tvmscript"') and "bind(" in script
    renamed = "# dlight's, by hand\n" + re.sub(r"\bl2\b", "i_outer", re.sub(r"\bb1\b", "blk", script))
    assert renamed != script and M.same_script(renamed, script)
    unscheduled = m.baseline(ctx, entry, "unscheduled")
    assert "script" not in unscheduled["candidates"][0]
