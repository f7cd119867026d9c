"""`dragon workloads --tasks FILE --split S`: a fixed random draw of one split's tasks as a workloads
folder (what `dragon eval --workloads` reads), and bad task files refused with a position."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from dragon_dsl.cli.main import main

TASKS = Path(__file__).resolve().parents[2] / "data" / "tasks" / "tasks.jsonl.gz"


def _draw(tmp_path, name, *flags) -> list:
    out = tmp_path / name
    assert main(["workloads", "--tasks", str(TASKS), "--count", "3", "-o", str(out), *flags]) == 0
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def test_a_draw_is_fixed_by_its_seed_and_stays_in_its_split(tmp_path):
    with gzip.open(TASKS, "rt", encoding="utf-8") as f:
        split_of = {str(t["id"]): t["split"] for t in map(json.loads, f)}
    first = _draw(tmp_path, "a", "--split", "test", "--seed", "7")
    again = _draw(tmp_path, "b", "--split", "test", "--seed", "7")
    other = _draw(tmp_path, "c", "--split", "test", "--seed", "8")
    assert [r["name"] for r in first] == [r["name"] for r in again]
    assert [r["name"] for r in first] != [r["name"] for r in other]
    assert all(split_of[r["params"]["task"]] == "test" for r in first + other)
    for r in first:
        text = (tmp_path / "a" / f"{r['name']}.tvmscript").read_text()
        assert "@T.prim_func" in text and r["name"].endswith(r["params"]["task"])
    assert all(split_of[r["params"]["task"]] == "validation" for r in _draw(tmp_path, "v", "--split", "validation"))


def test_a_line_that_is_not_json_is_refused_with_its_position(tmp_path, capsys):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"id": 1, "split": "test"}\n{"id": 2,, }\n')
    assert main(["workloads", "--tasks", str(bad), "-o", str(tmp_path / "out")]) == 2
    assert f"{bad}:2:10: not JSON" in capsys.readouterr().err
    assert not (tmp_path / "out" / "manifest.jsonl").exists()


def test_a_split_without_tasks_is_an_error(tmp_path, capsys):
    small = tmp_path / "tasks.jsonl"
    small.write_text(json.dumps({"id": 1, "name": "add", "text": "", "flops": 1, "split": "train"}) + "\n")
    assert main(["workloads", "--tasks", str(small), "--split", "test", "-o", str(tmp_path / "out")]) == 2
    assert "no task of split 'test'" in capsys.readouterr().err
