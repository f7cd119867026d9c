"""The training commands and `dragon suggest` end to end at toy size on the CPU (the pipeline cannot rot)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent.parent / "data"


def test_toy_corpus_has_the_corpus_row_format(toy_corpus):
    from dragon_model.data import load_rows

    rows = load_rows(toy_corpus)
    keys = {
        "id",
        "task",
        "split",
        "family",
        "workload",
        "workload_hash",
        "params",
        "target",
        "workload_text",
        "prompt_script",
        "prompt_latency_us",
        "script",
        "trace",
        "latency_us",
        "unscheduled_us",
        "dlight_us",
    }
    assert rows and all(keys <= set(r) for r in rows)
    train_families = {r["family"] for r in rows if r["split"] == "train"}
    held_out = {r["family"] for r in rows if r["split"] == "test_family"}
    assert held_out and not held_out & train_families
    assert {r["task"] for r in rows} == {"construction", "improvement"}
    manifest = json.loads((toy_corpus / "manifest.json").read_text())
    assert manifest["rows"] == len(rows)


def test_sft_saves_a_loadable_model(toy_model):
    info = json.loads((toy_model / "dragon_model.json").read_text())
    assert info["target"] == "llvm" and info["stages"]["sft"]["steps"] == 4
    assert (toy_model / "model.safetensors").exists() and (toy_model / "tokenizer.json").exists()


def test_a_model_past_the_shard_size_is_saved_in_small_files_and_loads(tmp_path):
    import torch

    from dragon_model.generate import load_model
    from dragon_model.tokenizer import build_tokenizer
    from dragon_model.train import make_model, save

    tok = build_tokenizer(compact=True)
    model = make_model(tok, "base")  # 16M parameters: 33 MB in float16
    save(model, tok, tmp_path, target="cuda", corpus=None, figures={}, save_dtype="float16")
    shards = sorted(tmp_path.glob("*.safetensors"))
    assert len(shards) >= 3 and all(p.stat().st_size <= 15_000_000 for p in shards)
    loaded, _ = load_model(tmp_path)
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a.to(torch.float16).float(), b.float()), name


def test_rl_runs_with_the_engine_reward(toy_corpus, toy_model, tmp_path):
    from dragon_dsl.cli.main import main

    out = tmp_path / "rl"
    rc = main(
        [
            "train",
            "rl",
            str(toy_corpus),
            "--model",
            str(toy_model),
            "-o",
            str(out),
            "--steps",
            "1",
            "--generations",
            "2",
            "--max-completion-length",
            "24",
            "--level",
            "verify",
            "--limit",
            "1",
        ]
    )
    assert rc == 0
    info = json.loads((out / "dragon_model.json").read_text())
    rl = info["stages"]["rl"]
    assert rl["completions"] == 2 and 0.0 <= rl["mean_reward_first_half"] <= 1.2
    assert "sft" in info["stages"]
    # what the SFT model was trained on (its grammar's instructions, literals, statement limit) and
    # how it reads prompts stay true of the RL model, which Generator loads from its own folder
    sft = json.loads((toy_model / "dragon_model.json").read_text())
    for key in ("instructions", "literals", "longest_script"):
        assert info[key] == sft[key], key


def test_reward_stages_and_no_cache():
    """Partial credit by stage; the engine is asked with use_cache=False."""
    from dragon_model.rl import EngineReward

    wl = (DATA / "workloads" / "matmul_64.tvmscript").read_text()
    calls = []

    class FakeEngine:  # records what the reward asks; the real engine is exercised in the RL test
        def measure(self, workload, traces, level, use_cache):
            calls.append((level, use_cache, len(traces)))
            from dragon_dsl.engine import Result, Status

            return [Result(Status.NUMERIC_MISMATCH) for _ in traces]

    reward = EngineReward(FakeEngine(), level="verify")
    texts = ["l0 = = (", 'b0 = get_sblock("nope", 3, 4)', 'b0 = get_sblock("nope")', 'b0 = get_sblock("C")\n']
    got = reward(["p"] * 4, texts, workload_text=[wl] * 4)
    assert got == [0.0, 0.1, 0.2, 0.6]
    assert calls == [("verify", False, 1)]


def test_suggest_returns_checked_replaying_scripts(toy_model):
    import dragon_model
    from dragon_dsl import check_text
    from dragon_dsl.language.diagnostics import Severity
    from dragon_dsl.tvm.replay import replay

    wl = DATA / "workloads" / "matmul_64.tvmscript"
    texts = dragon_model.suggest(workload=str(wl), target="llvm", script=None, n=2, model_path=str(toy_model))
    assert 1 <= len(texts) <= 2
    for text in texts:
        program, diags = check_text(text)
        assert not [d for d in diags if d.severity is Severity.ERROR]
        assert program.workload == "matmul_64.tvmscript"
        assert replay(program, wl).ok


def test_improve_falls_back_to_search_when_no_candidate_wins(toy_model, tmp_path, capsys):
    """An almost untrained model cannot beat a tuned schedule: the command says it searched, and where
    the search does not beat it either, the given script is the answer."""
    from dragon_dsl import from_trace_json
    from dragon_dsl.cli.main import main

    wl = DATA / "workloads" / "matmul_64.tvmscript"
    rec = next(
        json.loads(line)
        for line in open(DATA / "traces" / "sampled.jsonl")
        if '"matmul_64"' in line and '"llvm"' in line
    )
    script = tmp_path / "given.dragon"
    script.write_text(from_trace_json(rec["trace"], workload=str(wl), target=rec["target"]))
    out = tmp_path / "best.dragon"
    rc = main(
        [
            "improve",
            str(wl),
            str(script),
            "-k",
            "1",
            "--model",
            str(toy_model),
            "--search-trials",
            "4",
            "--json",
            "-o",
            str(out),
        ]
    )
    data = json.loads(capsys.readouterr().out)
    for key in ("script", "verified", "latency_us", "source", "candidates_tried"):
        assert key in data
    assert data["candidates_tried"] >= 1
    model_tried = [c for c in data["candidates"] if c["source"] == "model"]
    assert len(model_tried) == 1
    if data["source"] == "search":
        assert "fell back to a MetaSchedule search" in data["note"]
    elif data["source"] == "given":  # nothing written beat it: the given script is the answer
        assert data["verified"] and data["latency_us"] == data["given_latency_us"]
        assert "your script is already the fastest" in data["note"]
    else:  # the model's candidate really was faster: then it must have been verified and timed
        assert data["verified"] and data["latency_us"] < data["given_latency_us"]
    assert rc == (0 if data["verified"] else 1)
    if data["verified"]:  # -o holds the shown script: the answer, with its explanation graph when there is one
        written = out.read_text()
        assert written in (data["script"], data["explanation"])
        assert written.startswith(data["script"].rstrip("\n"))


def test_readme_main_command_uses_the_shipped_model(capsys):
    """`dragon suggest` with no argument: the embedded matmul, the shipped llvm weights, a verified,
    timed script from the model (the README's first command)."""
    from dragon_dsl.cli.main import main

    rc = main(["suggest", "-k", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["verified"] and data["latency_us"] > 0
    assert data["source"] == "model", data.get("note")
    assert "matmul_256.tvmscript" in data["script"]


def test_sft_records_the_instructions_it_was_trained_on(toy_model, toy_corpus):
    from dragon_model.data import instructions_of, load_rows

    info = json.loads((toy_model / "dragon_model.json").read_text())
    assert info["instructions"] and set(info["instructions"]) <= set(
        instructions_of(load_rows(toy_corpus, splits=["train"], target_kind="llvm"))
    )


@pytest.mark.parametrize("jobs", [1, 2])
def test_grammar_facts_in_one_pass_equal_the_three_walks(toy_corpus, jobs, monkeypatch):
    """Training reads the instructions, literals and longest script of its rows in one pass (over
    processes): the same as each function walking the rows by itself."""
    from dragon_model import data
    from dragon_model.data import grammar_facts, instructions_of, literals_of, load_rows, longest_script

    monkeypatch.setattr(data, "PARALLEL_FROM", 2)
    rows = load_rows(toy_corpus, splits=["train"], target_kind="llvm")
    assert grammar_facts(rows, jobs=jobs) == {
        "instructions": instructions_of(rows),
        "literals": literals_of(rows),
        "longest_script": longest_script(rows),
    }


def test_a_fine_tune_keeps_its_base_grammar_and_adds_its_rows():
    """A model fine-tuned from the shipped CUDA model on a few rows decodes under the union of both
    grammars: the base's 388 split factors stay offered, and a factor only the new rows write joins."""
    from pathlib import Path

    from dragon_model.data import merged_facts

    shipped = json.loads(
        (Path(__file__).resolve().parents[2] / "model" / "weights" / "cuda" / "dragon_model.json").read_text()
    )
    few = {
        "instructions": ["bind", "rfactor"],
        "longest_script": 12,
        "literals": {
            "categorical": [[7, 9]],
            "split_factors": [1, 4, 99991],
            "split_shapes": ["[None, 99991]"],
            "query_repeats": 1,
            "annotations": {"new_key": {"int": [3]}},
        },
    }
    both = merged_facts(shipped, few)
    lit, base = both["literals"], shipped["literals"]
    assert set(lit["split_factors"]) == set(base["split_factors"]) | {99991} and len(base["split_factors"]) == 388
    assert [7, 9] in lit["categorical"] and all(c in lit["categorical"] for c in base["categorical"])
    assert set(lit["split_shapes"]) == set(base["split_shapes"]) | {"[None, 99991]"}
    assert lit["annotations"]["new_key"] == {"int": [3]} and all(k in lit["annotations"] for k in base["annotations"])
    assert both["instructions"] == shipped["instructions"] and both["longest_script"] == shipped["longest_script"]
    assert merged_facts(shipped, {**shipped})["literals"] == base  # the base again: nothing changes
    assert merged_facts({}, few) == few  # a base without facts: the rows' own


def test_statement_limit_follows_the_longest_training_script(toy_model, toy_corpus, tmp_path):
    """Tensor-core CUDA schedules run to ~155 statements: a fixed limit of 96 cut every one of them.
    The trained model records its corpus' longest script; the generator allows 25% more."""
    import shutil

    from dragon_model.api import statement_lines
    from dragon_model.data import body_of_text, load_rows, longest_script
    from dragon_model.generate import DEFAULT_MAX_STATEMENTS, Generator

    rows = load_rows(toy_corpus, splits=["train"], target_kind="llvm")
    info = json.loads((toy_model / "dragon_model.json").read_text())
    assert longest_script(rows) == max(len(statement_lines(body_of_text(r["script"]))) for r in rows)
    assert 0 < info["longest_script"] <= longest_script(rows)  # the toy model trains on a subset
    copy = tmp_path / "m"
    shutil.copytree(toy_model, copy)
    info["longest_script"] = 160
    (copy / "dragon_model.json").write_text(json.dumps(info))
    assert Generator.from_path(copy).max_statements == 201
    recorded = json.loads((toy_model / "dragon_model.json").read_text())["longest_script"]
    assert Generator.from_path(toy_model).max_statements == max(DEFAULT_MAX_STATEMENTS, int(1.25 * recorded) + 1)
    assert Generator.from_path(copy, max_statements=7).max_statements == 7


def test_first_answer_evaluation_measures_real_answers(toy_corpus, toy_model):
    """The harness behind the model card's figures, at toy size: every answer is measured by the
    engine, failing ones are cut back, and the per-task figures add up from the answers."""
    from dragon_model.evaluate import evaluate

    fig = evaluate(
        toy_corpus,
        toy_model,
        splits=["test_family"],
        limit=2,
        level="verify",
        jobs=2,
        k=2,
        max_seconds=20,
        timeout_s=60,
        log=lambda m: None,
    )
    answers = fig["answers"]
    assert answers and {a["task"] for a in answers} <= {"construction", "improvement"}
    for task, f in fig["tasks"].items():
        mine = [a for a in answers if a["task"] == task]
        assert f["answers"] == len(mine) <= 2
        assert f["correct"] == sum(a["status"] == "ok" for a in mine)
        assert f["correct_as_generated"] == sum(a["status_as_generated"] == "ok" for a in mine)
        assert f["first_answer_correctness"] == f["correct"] / f["answers"]
        assert f["k"] == 2 and f["pass_at_k"] == sum(a["k_passed_as_generated"] > 0 for a in mine) / len(mine)
    for a in answers:
        assert a["statements"] == a["statements_generated"] - a["dropped"]
        assert (a["script_as_generated"] is None) == (a["dropped"] == 0)
        assert 0 <= a["k_passed_as_generated"] <= 2
        assert a["k_passed_as_generated"] >= (a["status_as_generated"] == "ok")


def test_evaluate_refuses_unknown_tasks_and_counts(capsys):
    import pytest

    from dragon_model.evaluate import main

    for argv in (["C", "--model", "M", "--tasks", "constructoin"], ["C", "--model", "M", "--k", "0"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--tasks 'constructoin'" in err and "--k and --jobs must be at least 1" in err


def test_sft_time_limit_stops_early_and_keeps_the_best_epoch(toy_corpus, tmp_path):
    """`--max-seconds` ends training at the first step past the limit (a device call has a hard
    limit); with `--keep-best` that step is evaluated and the model is still saved."""
    from dragon_dsl.cli.main import main

    out = tmp_path / "limited"
    rc = main(
        [
            "train",
            "sft",
            str(toy_corpus),
            "-o",
            str(out),
            "--size",
            "toy",
            "--epochs",
            "50",
            "--max-length",
            "384",
            "--batch-size",
            "2",
            "--limit",
            "12",
            "--keep-best",
            "--max-seconds",
            "0.01",
        ]
    )
    assert rc == 0
    sft = json.loads((out / "dragon_model.json").read_text())["stages"]["sft"]
    assert sft["stopped_by_time_limit"] is True
    assert sft["epochs_done"] < 1 and sft["steps"] == 1
    assert sft["valid_curve"], "the step that crossed the limit was evaluated"
    assert (out / "model.safetensors").exists()


def test_eval_generate_only_then_a_measured_run_uses_those_scripts(toy_model, tmp_path, monkeypatch):
    """`dragon eval --generate-only` writes the model's answers (no engine); the measured run finds
    them and does not call the model again (generation on a CPU machine, measurement on a GPU one)."""
    import shutil

    import dragon_model
    from dragon_dsl import from_trace_json
    from dragon_dsl.cli.main import main

    wl = tmp_path / "wl"
    wl.mkdir()
    shutil.copy(DATA / "workloads" / "matmul_64.tvmscript", wl)
    rec = next(
        json.loads(line)
        for line in open(DATA / "traces" / "sampled.jsonl")
        if '"matmul_64"' in line and '"llvm"' in line
    )
    (wl / "given.dragon").write_text(
        from_trace_json(rec["trace"], workload="matmul_64.tvmscript", target=rec["target"])
    )
    out = tmp_path / "out"
    argv = [
        "eval",
        "--workloads",
        str(wl),
        "--target",
        json.dumps(rec["target"]),
        "--methods",
        "unscheduled,model",
        "--k",
        "2",
        "--model-path",
        str(toy_model),
        "--repeat",
        "2",
        "--timeout",
        "10",
        "--out",
        str(out),
    ]
    assert main(argv + ["--generate-only"]) == 0
    files = sorted((out / "model").glob("*.json"))
    assert [f.name.split("-n")[0] for f in files] == ["matmul_64-construction"] * 2 + ["matmul_64-improvement"] * 2
    stored = {f.name: json.loads(f.read_text()) for f in files}
    assert all(d["host"]["cpus"] and d["scripts"] and d["generation_s"] > 0 for d in stored.values())
    assert not (out / "cache" / "results.sqlite").exists(), "generation measures nothing"

    def no_model(**kw):
        raise AssertionError("the measured run generated again")

    monkeypatch.setattr(dragon_model, "suggest", no_model)
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    model_rows = [r for r in results["measurements"] if r["method"].startswith("model-")]
    # measured, whatever the toy model's scripts are worth (one of its splits makes a 20G-iteration loop)
    assert len(model_rows) == 4 and all(r["status"] == "measured" and r["candidates"] for r in model_rows)
    assert {r["generation_s"] for r in model_rows} == {d["generation_s"] for d in stored.values()}
    assert all(r["generated_on"] == next(iter(stored.values()))["host"] for r in model_rows)
    assert (
        main(
            [
                "eval",
                "--workloads",
                str(wl),
                "--target",
                "llvm",
                "--methods",
                "unscheduled",
                "--generate-only",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
