"""Sampling the tasks of real networks (`dragon corpus pretrain --tasks tasks.jsonl --split train`):
only the split asked for is sampled, cheapest first, a file without splits is refused, and a record
names the task it came from.

Data: three workloads of tests/data/workloads written as a merged tasks.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dragon_dsl.corpus.pretrain import PretrainConfig, PretrainRun, task_specs

ROOT = Path(__file__).resolve().parents[2]
FILES = ["matmul_64.tvmscript", "softmax_64.tvmscript", "inplace_add_64.tvmscript"]


def _tasks(tmp_path, with_split=True) -> Path:
    lines = []
    for i, (name, split, flops) in enumerate(zip(FILES, ["train", "test", "train"], [65536.0, 8192.0, 64.0])):
        entry = {
            "id": str(1000 + i),
            "name": f"fused_{name.split('.')[0]}",
            "flops": flops,
            "text": (ROOT / "tests" / "data" / "workloads" / name).read_text(encoding="utf-8"),
        }
        if with_split:
            entry["split"] = split
        lines.append(json.dumps(entry))
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def test_only_the_split_asked_for_cheapest_first(tmp_path):
    specs = task_specs(_tasks(tmp_path), "train")
    assert [s.name for s in specs] == ["fused_inplace_add_64-1002", "fused_matmul_64-1000"]
    assert [s.name for s in task_specs(_tasks(tmp_path), "test")] == ["fused_softmax_64-1001"]


def test_min_flops_leaves_the_smaller_tasks_out_and_old_configurations_still_match(tmp_path):
    specs = task_specs(_tasks(tmp_path), "train", min_flops=100.0)
    assert [s.name for s in specs] == ["fused_matmul_64-1000"]
    old = PretrainConfig(tasks=str(_tasks(tmp_path))).to_json()
    assert "min_flops" not in old  # a run made before the option resumes under the same configuration
    assert PretrainConfig(tasks=str(_tasks(tmp_path)), min_flops=1e8).to_json()["min_flops"] == 1e8


def test_tasks_without_splits_or_an_unknown_split_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no split"):
        task_specs(_tasks(tmp_path, with_split=False), "train")
    with pytest.raises(ValueError, match="one of train, validation, test"):
        task_specs(_tasks(tmp_path), "dev")


@pytest.mark.slow
def test_a_record_per_task_with_its_scripts(tmp_path):
    out = tmp_path / "run"
    cfg = PretrainConfig(target="llvm", per_space=2, tasks=str(_tasks(tmp_path)), split="train")
    totals = PretrainRun(out, cfg).run(limit=1)
    assert totals["workloads"] == 1
    record = json.loads((out / "records" / "fused_inplace_add_64-1002.json").read_text(encoding="utf-8"))
    assert record["family"] == "fused_inplace_add_64" and record["params"] == {"task": "1002"}
    assert record["scripts"] or record["rejected"]


def test_a_record_of_a_held_out_task_carried_into_the_run_is_refused(tmp_path):
    """A run resumed from records of another tasks file must not feed a held-out network's task to
    training: the run refuses to open, naming the record."""
    from dragon_dsl.corpus.pretrain import RunConfigError

    out = tmp_path / "run"
    cfg = PretrainConfig(target="llvm", per_space=2, tasks=str(_tasks(tmp_path)), split="train")
    PretrainRun(out, cfg).open()
    (out / "records" / "fused_inplace_add_64-1002.json").write_text("{}", encoding="utf-8")
    PretrainRun(out, cfg).open()  # a train task's record: fine
    (out / "records" / "fused_softmax_64-1001.json").write_text("{}", encoding="utf-8")
    with pytest.raises(
        RunConfigError, match=r"1 record\(s\) of tasks outside the 'train' split .*fused_softmax_64-1001"
    ):
        PretrainRun(out, cfg).open()
