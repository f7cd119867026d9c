"""Mutation rounds of the label search (`dragon_model.mutation`): a mutant changes one sampled
decision of a measured script and stays a valid candidate; `records --batch` then measures it."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_a_random_tile_factors_the_extent_within_the_cap():
    rng = random.Random(0)
    for extent, n, cap in [(1024, 4, 64), (2048, 3, 64), (96, 5, 4), (7, 2, 64), (12, 1, 0)]:
        for _ in range(50):
            tile = random_tile_of(extent, n, cap, rng)
            assert len(tile) == n and math.prod(tile) == extent and (not cap or tile[-1] <= cap)


def random_tile_of(*args):
    from dragon_model.mutation import random_tile

    return random_tile(*args)


def test_a_mutant_changes_one_decision_and_nothing_else():
    from dragon_model.mutation import mutated_traces

    trace = [
        [
            ["GetSBlock", [], ["C", "main"], ["b0"]],
            ["GetLoops", ["b0"], [], ["l1", "l2"]],
            ["SamplePerfectTile", ["l1"], [3, 16], ["v3", "v4", "v5"]],
            ["SampleCategorical", [], [[0, 16, 64], [0.34, 0.33, 0.33]], ["v6"]],
            ["GetLoops", ["b0"], [], ["l7", "l8"]],
        ],
        [[2, [4, 4, 4]], [3, 1]],
    ]
    mutants = mutated_traces(trace, random.Random(1), 6)
    assert mutants and len({json.dumps(m) for m in mutants}) == len(mutants)
    for m in mutants:
        assert m[0] == trace[0]
        changed = [k for k in range(2) if m[1][k] != trace[1][k]]
        assert len(changed) == 1
        index, decision = m[1][changed[0]]
        if index == 2:
            assert math.prod(decision) == 64 and decision[-1] <= 16
        else:
            assert decision in (0, 2)
    only_queries = [trace[0][:2], []]
    assert mutated_traces(only_queries, random.Random(1), 4) == []


@pytest.mark.slow
def test_mutants_of_the_fastest_measured_script_are_checked_candidates(tmp_path):
    """llvm: a matmul's sampled scripts, the fastest given a latency; its mutants join the record as
    space `mutation`, encode back to themselves, replay, and go into the next measuring batch."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.corpus.pretrain import PretrainConfig, PretrainRun
    from dragon_dsl.levels import check_text_at_level
    from dragon_model.label_batch import candidate_id
    from dragon_model.mutation import main
    from dragon_model.records import main as records

    tasks = tmp_path / "tasks.jsonl"
    text = (ROOT / "tests" / "data" / "workloads" / "matmul_64.tvmscript").read_text(encoding="utf-8")
    tasks.write_text(json.dumps({"id": "7", "name": "matmul", "flops": 1.0, "split": "train", "text": text}) + "\n")
    run = tmp_path / "pre"
    PretrainRun(run, PretrainConfig(target="llvm", per_space=4, tasks=str(tasks))).run()
    (path,) = (run / "records").glob("*.json")
    record = json.loads(path.read_text())
    sampled = [s["text"] for s in record["scripts"]]
    assert sampled
    results = tmp_path / "results.jsonl"
    results.write_text(
        "".join(
            json.dumps({"id": candidate_id(record["name"], t), "status": "ok", "latency_us": 10.0 + i}) + "\n"
            for i, t in enumerate(sampled)
        )
    )
    assert main([str(run), "--measured", str(results), "--top", "1", "--per-parent", "6"]) == 0
    after = json.loads(path.read_text())
    mutants = [s["text"] for s in after["scripts"] if s["space"] == "mutation"]
    assert mutants and not set(mutants) & set(sampled)
    parent = to_trace_json(sampled[0])
    for m in mutants:
        trace = to_trace_json(m)
        assert trace[0] == parent[0] and sum(a != b for a, b in zip(trace[1], parent[1], strict=True)) == 1
        report = check_text_at_level(m, level="replay", workload=text)
        assert report.errors == 0 and report.level_reached == "replay", report.diagnostics
    batch = tmp_path / "batch.jsonl"
    assert records([str(run), "--batch", str(batch), "--measured", str(results), "--tasks", str(tasks)]) == 0
    ids = {json.loads(line)["id"] for line in batch.read_text().splitlines()}
    assert {candidate_id(record["name"], m) for m in mutants} <= ids
    assert not {candidate_id(record["name"], t) for t in sampled} & ids
