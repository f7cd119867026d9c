"""The committed task file (data/tasks/tasks.jsonl.gz): distinct ids in order, every task's split the
rule's under the committed manifest, and workloads that parse back to their ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from dragon_dsl.corpus.networks.driver import read_tasks
from dragon_dsl.corpus.networks.splits import assign, read_manifest
from dragon_dsl.corpus.networks.zoo import NETWORKS

DATA = Path(__file__).resolve().parents[2] / "data" / "tasks"


@pytest.fixture(scope="module")
def tasks():
    return read_tasks(DATA / "tasks.jsonl.gz")


def test_tasks_are_distinct_sorted_and_from_the_zoo(tasks):
    ids = [t["id"] for t in tasks]
    assert ids == sorted(set(ids)) and len(ids) > 1000
    assert {n for t in tasks for n in t["networks"]} <= set(NETWORKS)
    for t in tasks:
        assert t["count"] == sum(o["count"] for o in t["occurrences"]) >= 1
        assert sorted({o["network"] for o in t["occurrences"]}) == t["networks"]


def test_every_split_is_the_rule_s(tasks):
    split_of = read_manifest(DATA / "splits.json")
    assert {t["id"]: t["split"] for t in tasks} == assign(tasks, split_of)
    assert {t["split"] for t in tasks} == {"train", "validation", "test"}


@pytest.mark.slow
def test_a_sample_of_tasks_parses_back_to_its_ids(tasks):
    pytest.importorskip("tvm")
    from dragon_dsl.tvm.workload import load_workload, structural_hash

    for task in tasks[:: max(1, len(tasks) // 25)]:
        assert structural_hash(load_workload(task["text"])) == task["id"], task["name"]
