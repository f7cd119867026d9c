"""The labelling runs' cost model (`dragon_model.cost_model`): what a measuring budget finds, the
order it writes a batch in, and MetaSchedule's features of real records' candidates.

Data: hand-computed candidates, synthetic tasks whose speed is a known function of two features,
and one record of the committed single-block reductions (data/pretrain/cuda)."""

from __future__ import annotations

import json
import random
import tarfile
from pathlib import Path

import pytest

from dragon_model import cost_model as cm

ROOT = Path(__file__).resolve().parents[2]
REDUCTIONS = ROOT / "data" / "pretrain" / "cuda" / "records-single-reductions.tar.xz"


def test_a_budget_finds_the_fastest_only_when_it_is_measured():
    # (id, features, log2 speed-up over dlight or None, source): dlight is always measured
    rows = [("d", [0], 0.0, "dlight"), ("a", [0], -1.0, "cuda"), ("b", [0], 2.0, "cuda"), ("c", [0], None, "cuda")]
    assert cm.best_found(rows, [1, 2, 3, 0], 0.25) == (False, 0.25)  # a alone (and dlight): 2^(0 - 2)
    assert cm.best_found(rows, [2, 1, 3, 0], 0.25) == (True, 1.0)
    assert cm.best_found(rows, [3, 1, 2, 0], 0.5) == (False, 0.25)  # c failed, a is slower than dlight
    assert cm.best_found(rows, [3, 1, 2, 0], 1.0) == (True, 1.0)


def synthetic_tasks(n: int, seed: int) -> list:
    """Tasks of 8 candidates whose log2 speed-up over dlight is f0 - f1 (dlight's: 0)."""
    rng = random.Random(seed)
    tasks = []
    for t in range(n):
        rows = [(f"t{t}|dl", [0.0, 0.0, rng.random()], 0.0, "dlight")]
        for c in range(8):
            f = [rng.uniform(-2, 2), rng.uniform(-2, 2), rng.random()]
            rows.append((f"t{t}|{c}", f, f[0] - f[1], "cuda"))
        tasks.append((f"t{t}", 10.0, rows))
    return tasks


def test_the_model_ranks_a_held_out_task_and_beats_a_random_order():
    report = cm.evaluate(synthetic_tasks(60, 0), folds=3)
    quarter = report["budgets"]["0.25"]
    assert report["tasks"] == 60 and report["candidates"] == 60 * 9
    assert quarter["model"]["fastest_found"] >= 0.8 > quarter["random"]["fastest_found"]


def test_a_batch_is_written_best_ranked_first_task_by_task(tmp_path):
    train, (new_a, new_b) = synthetic_tasks(40, 1), synthetic_tasks(2, 2)
    model = cm.fit([r for t in train for r in t[2]])
    batch = tmp_path / "batch.jsonl"
    lines = [{"id": r[0], "workload": "w", "script": "s"} for t in (new_a, new_b) for r in t[2]] + [{"id": "other"}]
    batch.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    assert cm.order_batch(batch, [new_a, new_b], model) == len(lines)
    ids = [json.loads(x)["id"] for x in batch.read_text(encoding="utf-8").splitlines()]
    best = {t[0]: max(t[2], key=lambda r: r[2])[0] for t in (new_a, new_b)}
    assert set(ids[:2]) == set(best.values())  # each task's fastest first
    assert ids[-1] == "other" and sorted(ids) == sorted(x["id"] for x in lines)  # nothing lost


@pytest.mark.slow
def test_candidates_of_a_real_record_get_metaschedules_features():
    from dragon_dsl.tvm.features import FEATURE_COUNT

    with tarfile.open(REDUCTIONS) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
        record = json.loads(tar.extractfile(member).read())
    feats = cm.record_features(record)
    assert set(feats) == set(cm.candidate_ids(record)) and len(feats) >= 3
    rows = [f for f in feats.values() if f is not None]
    assert len(rows) == len(feats) and all(len(f) == FEATURE_COUNT for f in rows)
    assert len({tuple(f) for f in rows}) > 1  # other schedules, other features


def test_features_known_before_are_not_computed_again(monkeypatch, tmp_path):
    records = [
        {
            "name": n,
            "target": "nvidia/nvidia-h100",
            "scripts": [{"space": "cuda", "text": f"{n}-a"}],
            "dlight": {"text": f"{n}-b"},
        }
        for n in ("w1", "w2")
    ]
    computed = []

    def fake(record):
        computed.append(record["name"])
        return {i: [1.0] for i in cm.candidate_ids(record)}

    monkeypatch.setattr(cm, "record_features", fake)
    known = {i: [0.0] for i in cm.candidate_ids(records[0])}
    feats = cm.featurize(records, known, jobs=1)
    assert computed == ["w2"] and len(feats) == 4
    assert all(feats[i] == [0.0] for i in known)
    assert cm.read_features(tmp_path / "none.jsonl") == {}


def test_a_missing_input_is_an_error_that_names_it(tmp_path, capsys):
    assert cm.main([str(tmp_path / "nope"), "--measured", str(tmp_path), "--evaluate"]) == 2
    assert "nope: no such file or folder" in capsys.readouterr().err
