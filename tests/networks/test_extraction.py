"""A toy-size extraction through torch.export and TVM's Relax pipeline: a one-layer Llama of tiny
dims (prefill and decode) and a tiny ResNet, fp32. Every fused function parses back, tasks are
distinct by structural hash, a rerun skips finished networks, and the merge keeps one line per task."""

from __future__ import annotations

import json
import os
import time

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tvm")

from dragon_dsl.corpus.networks import driver
from dragon_dsl.corpus.networks.splits import assign

pytestmark = pytest.mark.slow
TOYS = ["toy-llama", "toy-convnet"]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    out = tmp_path_factory.mktemp("tasks")
    started = time.process_time()
    summary = driver.run(out, TOYS, log=lambda line: None)
    return out, summary, time.process_time() - started


def test_the_toys_extract_in_under_a_minute(extracted):
    out, summary, cpu_seconds = extracted
    assert summary == {"done": TOYS, "skipped": [], "failed": {}}
    # the process's CPU time, not the wall clock: parallel test workers on two cores stretch the latter
    assert cpu_seconds < 60, f"{cpu_seconds:.0f} s of CPU"
    for record in driver.read_records(out):
        assert [v["error"] for v in record["variants"]] == [None] * len(record["variants"]), record["variants"]
        assert all(v["tasks"] > 0 for v in record["variants"])


def test_every_task_parses_back_to_its_own_hash(extracted):
    from dragon_dsl.tvm.workload import load_workload, structural_hash

    out, _, _ = extracted
    tasks = [t for record in driver.read_records(out) for t in record["tasks"]]
    assert len(tasks) > 20
    for task in tasks:
        mod = load_workload(task["text"])
        assert structural_hash(mod) == task["id"], task["name"]
        assert "@T.prim_func(s_tir=True)" in task["text"] and "def main(" in task["text"]
        assert task["occurrences"] and all(o["count"] >= 1 for o in task["occurrences"])
    names = {t["name"] for t in tasks}
    assert any(n.startswith("fused_") for n in names), "FuseOps fused something"
    assert any("matmul" in n for n in names) and any("conv2d" in n for n in names)
    assert all(t["flops"] > 0 for t in tasks if "matmul" in t["name"] or "conv2d" in t["name"])


def test_tasks_are_distinct_within_a_network_and_shared_across_variants(extracted):
    out, _, _ = extracted
    for record in driver.read_records(out):
        ids = [t["id"] for t in record["tasks"]]
        assert len(ids) == len(set(ids)), record["network"]
    llama = next(r for r in driver.read_records(out) if r["network"] == "toy-llama")
    # prefill and decode share the weight layouts' tasks: one task, two occurrences
    assert any(len({o["variant"] for o in t["occurrences"]}) == 2 for t in llama["tasks"])


def test_a_rerun_skips_finished_networks(extracted):
    out, _, _ = extracted
    paths = [driver.record_path(out, name) for name in TOYS]
    before = [os.stat(p).st_mtime_ns for p in paths]
    assert driver.run(out, TOYS, log=lambda line: None) == {"done": [], "skipped": TOYS, "failed": {}}
    assert [os.stat(p).st_mtime_ns for p in paths] == before


def test_the_merge_deduplicates_across_networks(extracted, tmp_path):
    out, _, _ = extracted
    # a copy of a network under another name: every one of its tasks is already there
    (tmp_path / driver.RECORDS).mkdir()
    for record in driver.read_records(out):
        (tmp_path / driver.RECORDS / f"{record['network']}.json").write_text(json.dumps(record), encoding="utf-8")
        if record["network"] == "toy-convnet":
            copy = dict(record, network="toy-convnet-copy")
            (tmp_path / driver.RECORDS / "toy-convnet-copy.json").write_text(json.dumps(copy), encoding="utf-8")
    single = driver.read_tasks(driver.merge(out))
    doubled = driver.read_tasks(
        driver.merge(tmp_path, {"toy-llama": "train", "toy-convnet": "train", "toy-convnet-copy": "test"})
    )
    assert [t["id"] for t in single] == sorted({t["id"] for t in single})
    assert [t["id"] for t in doubled] == [t["id"] for t in single]
    for one, two in zip(single, doubled):
        if "toy-convnet" in one["networks"]:
            assert {"toy-convnet", "toy-convnet-copy"} <= set(two["networks"]) and two["count"] == 2 * one["count"]
            assert two["split"] == "test"
        else:
            assert two["split"] == "train"
    assert {t["id"]: t["split"] for t in doubled} == assign(
        doubled, {"toy-llama": "train", "toy-convnet": "train", "toy-convnet-copy": "test"}
    )
