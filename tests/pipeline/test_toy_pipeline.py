"""The whole model pipeline at toy size on the CPU (llvm), each stage reading the files the one before
wrote, through the commands a real run uses:

1. tasks of two toy networks (`python -m dragon_dsl.corpus.networks`), merged with splits by a manifest
   written here: toy-convnet trains, toy-llama is the test network, and a third record that shares two
   of toy-convnet's tasks (written from toy-convnet's, as tests/networks does) is held out for
   validation, so the rule "a task of a held-out network is held out" has something to decide;
2. candidates sampled for a few train tasks (`dragon_dsl.corpus.pretrain --tasks --split train`);
3. a labelling batch (`dragon_model.records --batch`), measured (`dragon measure --target llvm`), and
   the label report (`dragon_model.label_report`) checked against the results file;
4. training rows (`dragon_model.records --out --measured`), SFT of a toy model on them
   (`dragon_model.train`, canonical names) and a GRPO stage from it (`dragon_model.rl`);
5. the RL model evaluated on test-split tasks (`dragon workloads --tasks --split test`, `dragon eval`).

No stage is skipped without a GPU: CI has none, and this module is what keeps the pipeline from rotting.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

# no importorskip: CI installs the model extras, and a missing one must fail the pipeline, not skip it
import torch
import transformers  # noqa: F401
import trl  # noqa: F401
import tvm  # noqa: F401

# one xdist worker runs the whole chain (--dist loadscope, pyproject.toml): split over two, each
# would repeat the stages before its tests
pytestmark = pytest.mark.slow

NETWORKS = ["toy-convnet", "toy-llama"]
SHARED = "toy-convnet-shared"
MANIFEST = {"train": ["toy-convnet"], "validation": [SHARED], "test": ["toy-llama"]}
SAMPLED_TASKS = 4
PER_SPACE = 2
EVAL_TASKS = 2


def _jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _dragon(*argv) -> int:
    from dragon_dsl.cli.main import main

    return main([str(a) for a in argv])


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """Training and generation on one thread: on two shared cores torch's default threads fight the
    other processes (a GRPO step took 21 s with them, 1 s without)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("pipeline")


# -- 1. tasks ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tasks(root):
    from dragon_dsl.corpus.networks import driver
    from dragon_dsl.corpus.networks.__main__ import main as networks

    out = root / "tasks"
    argv = ["--out", str(out), "--networks", *NETWORKS, "--in-process"]
    assert networks([*argv, "--no-merge"]) == 0
    convnet = json.loads(driver.record_path(out, "toy-convnet").read_text(encoding="utf-8"))
    # the two cheapest: the sampler takes a split's cheapest tasks first, so a leak would show
    shared = sorted(convnet["tasks"], key=lambda t: (float(t["flops"]), t["id"]))[:2]
    driver.record_path(out, SHARED).write_text(
        json.dumps(dict(convnet, network=SHARED, tasks=shared)), encoding="utf-8"
    )
    manifest = root / "splits.json"
    manifest.write_text(json.dumps({"networks": MANIFEST}), encoding="utf-8")
    # the networks are done: this run skips them and merges the three records under the manifest
    assert networks([*argv, "--splits", str(manifest)]) == 0
    path = out / driver.TASKS
    return SimpleNamespace(
        path=path,
        rows=driver.read_tasks(path),
        shared={t["id"] for t in shared},
        convnet={t["id"] for t in convnet["tasks"]},
        manifest=manifest,
    )


def _split_ids(tasks, split: str) -> set:
    return {t["id"] for t in tasks.rows if t["split"] == split}


def test_tasks_are_merged_with_the_manifest_s_splits(tasks):
    from dragon_dsl.corpus.networks.splits import assign, read_manifest

    ids = [t["id"] for t in tasks.rows]
    assert ids == sorted(set(ids)) and len(ids) > 20
    assert tasks.shared < tasks.convnet <= set(ids)
    for t in tasks.rows:
        if t["id"] in tasks.shared:  # also a training network's task, but held out with its held-out network
            assert t["networks"] == ["toy-convnet", SHARED] and t["split"] == "validation", t["name"]
        elif t["id"] in tasks.convnet:
            assert t["networks"] == ["toy-convnet"] and t["split"] == "train", t["name"]
        else:
            assert t["networks"] == ["toy-llama"] and t["split"] == "test", t["name"]
    assert {t["id"]: t["split"] for t in tasks.rows} == assign(tasks.rows, read_manifest(tasks.manifest))


# -- 2. candidates of the train split ------------------------------------------------------------------


@pytest.fixture(scope="module")
def pre(root, tasks):
    from dragon_dsl.corpus.pretrain import main as pretrain
    from dragon_dsl.corpus.pretrain import read_records

    out = root / "pre"
    argv = ["--out", out, "--target", "llvm", "--tasks", tasks.path, "--split", "train"]
    assert pretrain([str(a) for a in [*argv, "--count", SAMPLED_TASKS, "--per-space", PER_SPACE]]) == 0
    return SimpleNamespace(path=out, records=read_records(out))


def test_candidates_are_sampled_for_the_cheapest_train_tasks_only(tasks, pre):
    train = sorted((t for t in tasks.rows if t["split"] == "train"), key=lambda t: (float(t["flops"]), t["id"]))
    assert {r["params"]["task"] for r in pre.records} == {t["id"] for t in train[:SAMPLED_TASKS]}
    assert not {r["params"]["task"] for r in pre.records} & (tasks.shared | _split_ids(tasks, "test"))
    for r in pre.records:
        assert r["hash"] == r["params"]["task"], r["name"]  # the workload parses back to its task
        assert 1 <= len(r["scripts"]) <= PER_SPACE and {s["space"] for s in r["scripts"]} == {"llvm"}
        assert "dlight" not in r  # no dlight on a CPU
        for s in r["scripts"]:
            assert s["text"].startswith(f'workload "{r["name"]}.tvmscript"\ntarget {{"kind": "llvm"')


# -- 3. labels: batch, measurement, report -------------------------------------------------------------


@pytest.fixture(scope="module")
def measured(root, pre):
    from dragon_model.records import main as records

    folder = root / "labels"
    batch, results = folder / "batch.jsonl", folder / "results.jsonl"
    assert records([str(pre.path), "--batch", str(batch)]) == 0
    timing = ["--repeat", 2, "--min-repeat-ms", 1, "--input-sets", 1]
    assert _dragon("measure", batch, "--target", "llvm", "-o", results, *timing, "--json") == 0
    return SimpleNamespace(batch=batch, results=results, lines=_jsonl(batch), rows=_jsonl(results))


@pytest.fixture(scope="module")
def label_report(root, pre, measured):
    from dragon_model.label_report import main as report

    out = root / "labels" / "report.json"
    assert report([str(pre.path), "--measured", str(measured.results), "--json", str(out)]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def _has_statements(script: str) -> bool:
    """Whether a script does more than name its workload and target (the program as written does not)."""
    return any(line.strip() for line in script.split("\n\n", 1)[1:])


def test_the_batch_holds_every_sample_and_the_program_as_written(pre, measured):
    for r in pre.records:
        mine = [line for line in measured.lines if line["id"].rsplit("|", 1)[0] == r["name"]]
        assert {line["workload"] for line in mine} == {f"workloads/{r['name']}.tvmscript"}
        assert [line["script"] for line in mine if _has_statements(line["script"])] == [s["text"] for s in r["scripts"]]
        assert sum(not _has_statements(line["script"]) for line in mine) == 1, r["name"]
        written = (measured.batch.parent / "workloads" / f"{r['name']}.tvmscript").read_text(encoding="utf-8")
        assert written.strip() == r["workload"].strip()
    assert len(measured.lines) == sum(len(r["scripts"]) + 1 for r in pre.records)


def test_every_candidate_is_measured_once_and_verifies(measured):
    assert sorted(r["id"] for r in measured.rows) == sorted(line["id"] for line in measured.lines)
    for r in measured.rows:
        assert r["status"] == "ok" and r["latency_us"] > 0, r
        assert json.loads(r["target"])["kind"] == "llvm"


def _fastest(measured) -> dict:
    """{workload name: (latency, batch line)} of each workload's fastest verified candidate, from the files."""
    line_of = {line["id"]: line for line in measured.lines}
    best: dict = {}
    for r in measured.rows:
        if r["status"] == "ok":
            name = r["id"].rsplit("|", 1)[0]
            if name not in best or r["latency_us"] < best[name][0]:
                best[name] = (r["latency_us"], line_of[r["id"]])
    return best


def test_the_label_report_agrees_with_the_results(pre, measured, label_report):
    best = _fastest(measured)
    unscheduled = {
        r["id"].rsplit("|", 1)[0]: r["latency_us"]
        for r in measured.rows
        if not _has_statements({line["id"]: line for line in measured.lines}[r["id"]]["script"])
    }
    rows = {r["name"]: r for r in label_report["rows"]}
    assert set(rows) == set(best) == {r["name"] for r in pre.records}
    for name, (latency, line) in best.items():
        assert rows[name]["label_us"] == latency
        # the label's source is the fastest candidate's: the program as written or a design space's sample
        assert (rows[name]["source"] == "unscheduled") == (not _has_statements(line["script"])), name
        assert rows[name]["label_us"] <= unscheduled[name]  # on a CPU the program as written is the floor
        assert rows[name]["dlight_us"] is None  # no dlight on a CPU: nothing to compare against
    summary = label_report["summary"]
    assert summary["workloads"] == len(best) and summary["with_dlight"] == 0 and summary["label_is_dlight"] == 0
    assert sum(summary["wins_by_source"].values()) == len(best)
    assert set(summary["wins_by_source"]) <= {"unscheduled", "llvm"}
    assert "geomean_over_dlight" not in summary


# -- 4. rows, SFT, GRPO ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rows(root, tasks, pre, measured):
    from dragon_model.records import main as records

    out = root / "rows"
    assert (
        records([str(pre.path), "--out", str(out), "--measured", str(measured.results), "--tasks", str(tasks.path)])
        == 0
    )
    return SimpleNamespace(
        path=out, pretrain=_jsonl(out / "pretrain" / "rows.jsonl"), sft=_jsonl(out / "sft" / "rows.jsonl")
    )


def test_rows_teach_every_sample_and_each_label_that_beats_the_program(pre, label_report, rows):
    from dragon_model.tokenizer import EOS

    names = {r["name"]: r for r in pre.records}
    assert len(rows.pretrain) == sum(len(r["scripts"]) for r in pre.records)
    assert {r["workload"] for r in rows.pretrain} == set(names)
    for r in rows.pretrain + rows.sft:
        assert r["workload_hash"] == names[r["workload"]]["hash"] and r["split"] in ("train", "valid")
        assert r["completion"].endswith(EOS) and r["workload_text"] == names[r["workload"]]["workload"]
    # a label that does not beat the program as written teaches nothing (an empty answer)
    taught = {r["name"]: r["label_us"] for r in label_report["rows"] if r["source"] != "unscheduled"}
    labels = [r for r in rows.sft if r["task"] == "construction"]
    assert {r["workload"]: r["latency_us"] for r in labels} == taught and len(labels) == len(taught)
    assert all(r["workload"] in taught for r in rows.sft)


@pytest.fixture(scope="module")
def sft(root, rows):
    from dragon_model.train import main as train

    out = root / "sft"
    argv = [rows.path, "-o", out, "--size", "toy", "--max-steps", 4, "--batch-size", 2, "--max-length", 2048]
    assert train([str(a) for a in [*argv, "--canonical-names", "all"]]) == 0
    return out


@pytest.fixture(scope="module")
def rl(root, rows, sft):
    from dragon_model.rl import main as grpo

    out = root / "rl"
    argv = [rows.path, "--model", sft, "-o", out, "--steps", 2, "--generations", 2, "--limit", 2]
    assert grpo([str(a) for a in [*argv, "--level", "verify", "--max-completion-length", 64]]) == 0
    return out


def _info(folder: Path) -> dict:
    return json.loads((folder / "dragon_model.json").read_text(encoding="utf-8"))


def test_sft_trains_on_the_rows_under_canonical_names(rows, sft):
    info = _info(sft)
    assert info["target"] == "llvm" and info["corpus"] == str(rows.path) and info["canonical_names"] == "all"
    figures = info["stages"]["sft"]
    assert figures["steps"] == 4 and figures["skipped_steps"] == 0
    train_rows = [r for r in rows.pretrain + rows.sft if r["split"] == "train"]
    assert 0 < figures["train_examples"] <= len(train_rows)
    assert set(info["stages"]) == {"sft"} and (sft / "model.safetensors").exists()


def test_grpo_continues_from_the_sft_model_and_records_both_stages(sft, rl):
    info, before = _info(rl), _info(sft)
    assert set(info["stages"]) == {"sft", "rl"}
    assert info["stages"]["sft"] == before["stages"]["sft"]
    figures = info["stages"]["rl"]
    assert figures["steps"] == 2 and figures["workloads"] == 2 and figures["completions"] == 4
    assert figures["level"] == "verify" and 0.0 <= figures["mean_reward_first_half"] <= 0.8
    # what the SFT model reads prompts by stays true after RL
    assert info["canonical_names"] == "all" and info["instructions"] == before["instructions"]
    assert (rl / "model.safetensors").exists() and (rl / "tokenizer.json").exists()


# -- 5. evaluation on the test split ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluation(root, tasks, rl):
    workloads, out = root / "test-workloads", root / "eval"
    argv = ["--tasks", tasks.path, "--split", "test", "--count", EVAL_TASKS, "-o", workloads]
    assert _dragon("workloads", *argv) == 0
    methods = ["--methods", "unscheduled,model", "-k", 1, "--model", rl, "--repeat", 1, "--input-sets", 1]
    assert _dragon("eval", "--workloads", workloads, "--target", "llvm", *methods, "--out", out) == 0
    return SimpleNamespace(
        workloads=workloads,
        manifest=_jsonl(workloads / "manifest.jsonl"),
        results=json.loads((out / "results.json").read_text(encoding="utf-8")),
        report=(out / "report.md").read_text(encoding="utf-8"),
    )


def test_the_evaluation_s_workloads_are_test_tasks(tasks, evaluation):
    by_id = {t["id"]: t for t in tasks.rows}
    assert len(evaluation.manifest) == EVAL_TASKS
    for row in evaluation.manifest:
        task = by_id[row["params"]["task"]]
        assert task["split"] == "test"
        assert (evaluation.workloads / f"{row['name']}.tvmscript").read_text(encoding="utf-8").strip() == task[
            "text"
        ].strip()


def test_every_answer_of_the_model_was_checked(rl, evaluation):
    from dragon_dsl.engine.result import Status

    known = {s.value for s in Status} | {"parse_error", "type_error"}
    results = evaluation.results
    assert results["settings"]["model_path"] == str(rl) and results["settings"]["k"] == 1
    assert set(results["methods"]) == {"unscheduled", "model-first"}
    names = {row["name"] for row in evaluation.manifest}
    assert {w["name"] for w in results["workloads"]} == names
    rows = results["measurements"]
    assert {(r["workload"], r["method"]) for r in rows} == {(n, m) for n in names for m in results["methods"]}
    for r in rows:
        assert r["status"] == "measured" and len(r["candidates"]) == 1, r
        (candidate,) = r["candidates"]
        assert candidate["status"] in known, candidate
        assert (candidate["latency_us"] is not None) == (candidate["status"] == "ok"), candidate
        if r["method"] == "unscheduled":
            assert candidate["status"] == "ok"
        else:
            assert candidate["origin"] in ("model", "completed") and candidate["script"].startswith("workload ")
    assert not results["problems"] and not results["deferred"]
    assert "| unscheduled |" in evaluation.report and "model-first" in evaluation.report
