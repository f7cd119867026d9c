"""The corpus builder, re-verification and the data card, on the tiny run of conftest."""

from __future__ import annotations

import json
import random

import datasets
import pytest

from dragon_dsl.corpus.build import SPLITS, BuildConfig, choose, choose_test_families, features, load_corpus, split_of
from dragon_dsl.corpus.search_run import RunConfigError, candidate_entry, parse_shard, read_manifest, shard_of

from .conftest import SPECS, build_config


def _rows(corpus_dir) -> list:
    _, splits = load_corpus(corpus_dir)
    return [dict(r) for s in SPLITS for r in splits[s]]


def test_splits_hold_out_families_and_shapes(built_corpus):
    out, manifest = built_corpus
    rows = _rows(out)
    assert manifest["build"]["test_families"] == ["softmax"]
    by_split = {s: {r["family"] for r in rows if r["split"] == s} for s in SPLITS}
    assert by_split["test_family"] == {"softmax"}
    assert not (by_split["train"] | by_split["valid"] | by_split["test_shape"]) & {"softmax"}, "family leak"
    train_workloads = {r["workload"] for r in rows if r["split"] == "train"}
    shape_workloads = {r["workload"] for r in rows if r["split"] == "test_shape"}
    assert not train_workloads & shape_workloads, "a held-out shape is in train"
    assert shape_workloads and train_workloads
    for r in rows:  # both tasks of a workload share one split, the one its params hash to
        assert r["split"] == split_of(r["family"], json.loads(r["params"]), ["softmax"], build_config())


def test_every_example_is_verified_and_improvements_are_slower(built_corpus):
    out, manifest = built_corpus
    rows = _rows(out)
    construction = [r for r in rows if r["task"] == "construction"]
    assert len(construction) == len(SPECS) == len({r["workload"] for r in construction})
    assert sum(v for part in manifest["counts"]["by_split"].values() for v in part.values()) == len(rows)
    from dragon_dsl import to_trace_json

    for r in rows:
        assert r["latency_us"] > 0 and r["unscheduled_us"] > 0 and r["dlight_us"] is None
        assert to_trace_json(r["script"]) == json.loads(r["trace"])
        assert r["script"].startswith(f'workload "{r["workload"]}.tvmscript"')
        assert json.loads(r["target"]) == {"kind": "llvm", "num-cores": 2}
        if r["task"] == "improvement":
            assert r["prompt_script"] and r["prompt_script"] != r["script"]
            assert r["prompt_latency_us"] >= 1.2 * r["latency_us"]
        else:
            assert r["prompt_script"] is None and r["prompt_latency_us"] is None
    best = {r["workload"]: r["script"] for r in construction}
    assert all(r["script"] == best[r["workload"]] for r in rows), "improvements lead to the best script"


def test_reverify_passes_and_catches_tampering(built_corpus, corpus_engine, tmp_path):
    import shutil

    from dragon_dsl.corpus.verify import verify_corpus

    out, _ = built_corpus
    report = verify_corpus(out, engine=corpus_engine)
    assert report["examples"] > 0 and report["passed"] == report["examples"] and report["share"] == 1.0

    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    path = bad / "data" / "train.parquet"
    rows = [dict(r) for r in datasets.Dataset.from_parquet(str(path))]
    other = next(r for s in SPLITS for r in _rows(out) if r["workload"] != rows[0]["workload"])
    rows[0]["workload_text"] = other["workload_text"]  # the script no longer fits its workload
    rows.append(dict(rows[-1]))  # a duplicate example
    datasets.Dataset.from_list(rows, features=features()).to_parquet(str(path))
    report = verify_corpus(bad, engine=corpus_engine)
    assert report["passed"] == report["examples"] - 2
    problems = {f["id"]: " ".join(f["problems"]) for f in report["failures"]}
    assert "hash" in problems[rows[0]["id"]] and "duplicate id" in problems[rows[-1]["id"]]


def test_verify_command_json_and_card(built_corpus, tmp_path):
    from dragon_dsl.cli.corpus import main as corpus_main
    from dragon_dsl.corpus.card import data_card, stats, write_card

    out, manifest = built_corpus
    path = write_card(out)
    text = path.read_text()
    rows = _rows(out)
    s = stats(out)
    for family in {r["family"] for r in rows}:
        counts = [sum(r["family"] == family and r["split"] == sp for r in rows) for sp in SPLITS]
        assert f"| {family} | " + " | ".join(map(str, counts)) + f" | {sum(counts)} |" in text
    assert "Speedup over the unscheduled program" in text and "No baseline for this target." in text
    assert s["speedup_unscheduled"]["all"]["n"] == len(SPECS)
    assert "whole families never in train: softmax." in text and data_card(out) == text
    assert corpus_main(["corpus", "card", str(tmp_path / "nope")]) == 2


# --- pure functions ----------------------------------------------------------------------------------
def test_split_functions_are_stable_and_hold_out_by_family():
    families = [f"fam{i}" for i in range(10)]
    cfg = BuildConfig(n_test_families=3)
    held = choose_test_families(families, cfg)
    assert len(held) == 3 and held == choose_test_families(list(reversed(families)), cfg)
    assert choose_test_families(families, BuildConfig(n_test_families=3, split_seed=1)) != held
    rng = random.Random(0)
    splits = {}
    for _ in range(2000):
        f, p = rng.choice(families), {"m": rng.randint(1, 10**6), "dtype": "float32"}
        s = split_of(f, p, held, cfg)
        assert s == split_of(f, dict(reversed(list(p.items()))), held, cfg), "params order does not matter"
        assert (s == "test_family") == (f in held)
        splits[s] = splits.get(s, 0) + 1
    others = 2000 - splits["test_family"]
    assert 0.06 < splits["test_shape"] / others < 0.14 and 0.06 < splits["valid"] / others < 0.14
    with pytest.raises(ValueError, match="not in the records"):
        choose_test_families(families, BuildConfig(test_families=("nope",)))
    with pytest.raises(ValueError, match="nothing is left"):
        choose_test_families(["a"], BuildConfig(test_families=("a",)))


def test_choose_best_and_slower_candidates():
    def cand(i, lat, status="ok"):
        return {"trace": [[["X", [], [], [f"b{i}"]]], []], "status": status, "latency_us": lat}

    rec = {
        "workload_hash": "1",
        "candidates": [
            cand(0, 10.0),
            cand(1, 5.0),
            cand(2, 5.5),
            cand(3, 9.0),
            cand(4, None, "build_error"),
            cand(5, 6.0),
            cand(6, 50.0),
        ],
    }
    best, slower = choose(rec, BuildConfig(improvements=2))
    assert best["latency_us"] == 5.0
    assert len(slower) == 2 and all(c["latency_us"] >= 6.0 for c in slower)
    assert choose(rec, BuildConfig(improvements=2)) == (best, slower), "deterministic"
    assert len(choose(rec, BuildConfig(improvements=9))[1]) == 4
    assert choose({"workload_hash": "1", "candidates": [cand(0, None, "timeout")]}, BuildConfig()) == (None, [])


def test_candidate_status_parsing_and_shards():
    assert candidate_entry([], "build_error: no", None, None)["status"] == "build_error"
    assert candidate_entry([], None, "numeric_mismatch: off by 3", None)["status"] == "numeric_mismatch"
    assert candidate_entry([], None, "something else", None)["status"] == "error"
    assert candidate_entry([], None, None, [1e10])["status"] == "error"
    ok = candidate_entry([], None, None, [2e-6, 1e-6, 3e-6])
    assert ok["status"] == "ok" and abs(ok["latency_us"] - 2.0) < 1e-9
    names = [f"w{i}" for i in range(300)]
    parts = [{n for n in names if shard_of(n, 4) == i} for i in range(4)]
    assert set().union(*parts) == set(names) and sum(map(len, parts)) == 300 and all(parts)
    assert parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "x", "1/0", "-1/2"):
        with pytest.raises(RunConfigError):
            parse_shard(bad)


def test_bad_workload_folders_get_clear_errors(tmp_path):
    with pytest.raises(RunConfigError, match="no manifest.jsonl"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.jsonl").write_text('{"name": "a", "family": "f", "params": {}, "hash": "1"}\n')
    with pytest.raises(RunConfigError, match="a.tvmscript is missing"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.jsonl").write_text('{"name": "../a", "family": "f", "params": {}, "hash": "1"}\n')
    with pytest.raises(RunConfigError, match="bad workload name"):
        read_manifest(tmp_path)


def test_open_removes_writes_cut_short_and_refuses_other_configs(tmp_path):
    from dragon_dsl.corpus.search_run import SearchConfig, SearchRun

    cfg = SearchConfig(target={"kind": "llvm", "num-cores": 2}, budget=2)
    run = SearchRun(tmp_path / "run", tmp_path, cfg)
    run.open()
    dead = 2**22 + 12345  # above the default pid_max of 2**22: no such process
    stray = run.records_dir / f".w.json.{dead}.tmp"
    stray.write_text("{")
    run.open()
    assert not stray.exists()
    other = SearchRun(
        tmp_path / "run", tmp_path, SearchConfig(target={"kind": "llvm", "num-cores": 2}, budget=2, seed=5)
    )
    with pytest.raises(RunConfigError, match="seed: was 0, now 5"):
        other.open()


def test_scripts_of_traces_whose_index_maps_carry_source_spans():
    """MetaSchedule's tensor-core traces (TransformLayout) carry index maps with source spans; the
    codec drops spans, so the script encodes back to the same trace up to them. The corpus keeps
    such examples (it dropped all f16 tensor-core ones before) and stores the exact encoding."""
    from pathlib import Path

    from dragon_dsl import to_trace_json
    from dragon_dsl.corpus.build import make_script
    from dragon_dsl.language.codec.equal import traces_equal

    trace = json.loads((Path(__file__).parents[1] / "data/traces/index_map_with_spans.json").read_text())
    text, encoded = make_script(trace, "bmm.tvmscript", "nvidia/nvidia-h100")
    assert encoded != trace and traces_equal(encoded, trace) == []  # only the spans differ
    assert to_trace_json(text) == encoded
    swapped = json.loads(json.dumps(trace))
    graph = swapped[0][-1][1][1]
    swapped[0][-1][1][1] = graph.replace(
        '"data":[5,7,9]},{"type":"tirx.IndexMap"', '"data":[5,9,7]},{"type":"tirx.IndexMap"'
    )
    assert swapped != trace and traces_equal(swapped, trace) == ["trace[0][6][1][1]: index maps differ"]
