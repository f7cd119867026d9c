"""The second-generation pipeline at toy size on the CPU: design-space records -> rows ->
pretraining -> fine-tuning from the pretrained weights -> a suggestion, with the compact tokenizer;
dlight's schedule as a script; the relative cut of slow candidates."""

from __future__ import annotations

import json
import lzma

import pytest

from dragon_dsl.corpus.generator import WorkloadSpec
from dragon_dsl.corpus.pretrain import PretrainConfig, PretrainRun, read_records, summary


def _tiny(cfg: PretrainConfig) -> list:
    # two small workloads of today's families, whatever the generator's first draws are
    return [
        WorkloadSpec("gated_mlp", (("act", "silu"), ("dtype", "float32"), ("ffn", 64), ("tokens", 4))),
        WorkloadSpec("rms_norm_llm", (("dtype", "float32"), ("m", 4), ("n", 64), ("rms", 1))),
    ]


@pytest.fixture(scope="module")
def records(tmp_path_factory, monkeypatch_module):
    out = tmp_path_factory.mktemp("pre")
    monkeypatch_module.setattr("dragon_dsl.corpus.pretrain.workload_specs", _tiny)
    run = PretrainRun(out, PretrainConfig(target="llvm", count=2, per_space=3))
    totals = run.run()
    return out, totals


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_records_hold_checked_scripts_and_resume(records):
    from dragon_dsl import check_text

    out, totals = records
    assert totals["workloads"] == 2 and totals["scripts"] >= 2
    for r in read_records(out):
        assert r["target"]["kind"] == "llvm" and "def main" in r["workload"]
        for s in r["scripts"]:
            program, diags = check_text(s["text"])
            assert not [d for d in diags if d.severity.name == "ERROR"], s["text"][:200]
            assert s["space"] == "llvm"
    again = PretrainRun(out, PretrainConfig(target="llvm", count=2, per_space=3)).run()
    assert not again, "a finished run has nothing pending"
    with pytest.raises(ValueError, match="another configuration"):
        PretrainRun(out, PretrainConfig(target="llvm", count=2, per_space=4)).open()
    assert summary(out)["workloads"] == 2


def test_dlight_script_round_trips_and_compiles_for_cuda():
    from dragon_dsl import from_trace_json, to_trace_json
    from dragon_dsl.language.codec.equal import traces_equal
    from dragon_dsl.tvm.compile import compile_checked
    from dragon_dsl.tvm.dlight import dlight_trace
    from dragon_dsl.tvm.target import tvm_target

    mod = WorkloadSpec("rms_norm_llm", (("dtype", "float16"), ("m", 8), ("n", 256), ("rms", 1))).build()
    target = tvm_target("nvidia/nvidia-h100")
    rule, trace = dlight_trace(mod, target)
    assert rule == "Reduction"
    text = from_trace_json(trace, workload="w.tvmscript", target="nvidia/nvidia-h100")
    assert traces_equal(to_trace_json(text), trace) == []  # index maps compare structurally
    compile_checked(mod, {"trace": trace}, target)  # CUDA source on a machine without a GPU


def test_rows_pretrain_then_finetune_then_suggest(records, tmp_path):
    from dragon_dsl.cli.main import main
    from dragon_model.records import build
    from dragon_model.tokenizer import load_tokenizer

    out, _ = records
    figures = build([out], tmp_path / "rows", log=lambda m: None)
    assert figures["pretrain_rows"] >= 2 and figures["errors"] == 0
    rows = [json.loads(x) for x in (tmp_path / "rows" / "pretrain" / "rows.jsonl").read_text().splitlines()]
    for r in rows:
        assert r["prompt"].startswith("<s><workload>") and r["completion"].endswith("</s>")
        r["split"] = "train"  # a toy set: every row trains
    (tmp_path / "rows" / "pretrain" / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pre, ft = tmp_path / "pre", tmp_path / "ft"
    assert (
        main(
            [
                "train",
                "sft",
                str(tmp_path / "rows" / "pretrain"),
                "-o",
                str(pre),
                "--size",
                "toy",
                "--max-steps",
                "2",
                "--batch-size",
                "2",
            ]
        )
        == 0
    )
    assert len(load_tokenizer(pre)) > 3000, "new models use the compact tokenizer"
    assert (
        main(
            [
                "train",
                "sft",
                str(tmp_path / "rows" / "pretrain"),
                "-o",
                str(ft),
                "--base",
                str(pre),
                "--max-steps",
                "2",
                "--batch-size",
                "2",
            ]
        )
        == 0
    )
    # a fine-tune on one of those rows keeps the grammar its base decodes under (`data.merged_facts`)
    one = tmp_path / "ft-one"
    assert (
        main(
            [
                "train",
                "sft",
                str(tmp_path / "rows" / "pretrain"),
                "-o",
                str(one),
                "--base",
                str(pre),
                "--max-steps",
                "1",
                "--batch-size",
                "1",
                "--limit",
                "1",
            ]
        )
        == 0
    )
    facts = {d: json.loads((d / "dragon_model.json").read_text()) for d in (pre, one)}
    assert facts[one]["literals"] == facts[pre]["literals"] and facts[one]["instructions"] == facts[pre]["instructions"]
    import dragon_model

    wl = read_records(out)[0]["workload"]
    texts = dragon_model.suggest(workload=wl, target="llvm", n=1, model_path=str(ft), max_seconds=20)
    assert len(texts) == 1
    # then RL from execution on the fine-tuned weights, with the same rows: the whole second-generation
    # pipeline, records to GRPO, at toy size
    rl = tmp_path / "rl"
    assert (
        main(
            [
                "train",
                "rl",
                str(tmp_path / "rows" / "pretrain"),
                "--model",
                str(ft),
                "-o",
                str(rl),
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
        == 0
    )
    stages = json.loads((rl / "dragon_model.json").read_text())["stages"]
    assert stages["rl"]["completions"] == 2 and "sft" in stages


def test_measured_labels_are_the_fastest_verified_scripts(records, tmp_path, capsys):
    """Records -> a `dragon measure` batch -> measured on this CPU -> rows whose label is each
    workload's fastest verified script, with the slower measured ones as improvement prompts."""
    from dragon_dsl.cli.main import main
    from dragon_model.data import body_of_text
    from dragon_model.records import build, candidate_id, label_candidates, merged_records, read_measured

    out, _ = records
    batch, results = tmp_path / "b" / "batch.jsonl", tmp_path / "results.jsonl"
    assert main(["measure", str(batch), "--target", "llvm", "--out", str(results)]) == 2  # no batch yet
    from dragon_model.records import main as records_main

    assert records_main([str(out), "--batch", str(batch)]) == 0
    parallel = tmp_path / "b2" / "batch.jsonl"  # workloads parsed by two processes: the same batch
    assert records_main([str(out), "--batch", str(parallel), "--jobs", "2"]) == 0
    assert parallel.read_text() == batch.read_text()
    recs = merged_records([out])
    assert len(batch.read_text().splitlines()) == sum(len(label_candidates(r)) for r in recs)
    # on a CPU the program as written is a candidate too: the header alone, the floor a label must beat
    plain = [json.loads(x) for x in batch.read_text().splitlines() if not body_of_text(json.loads(x)["script"])]
    assert len(plain) == len(recs) and all(x["script"].startswith("workload ") for x in plain)
    assert (
        main(
            [
                "measure",
                str(batch),
                "--target",
                "llvm",
                "--out",
                str(results),
                "--json",
                "--repeat",
                "1",
                "--min-repeat-ms",
                "1",
                "--workers",
                "1",
            ]
        )
        == 0
    )
    measured = read_measured([results])
    packed = tmp_path / "results.jsonl.xz"  # as labels are shipped
    packed.write_bytes(lzma.compress(results.read_bytes()))
    assert read_measured([packed]) == measured
    # these workloads are tiny, where the program as written is often fastest (and then no row is
    # taught): the rows below are built from the samples' results alone, the last check from all
    everything, results = results, tmp_path / "samples.jsonl"
    floor = {json.loads(x)["id"] for x in batch.read_text().splitlines() if not body_of_text(json.loads(x)["script"])}
    results.write_text(
        "".join(x + "\n" for x in everything.read_text().splitlines() if json.loads(x)["id"] not in floor)
    )
    figures = build([out], tmp_path / "rows", log=lambda m: None, measured=[results])
    assert figures["measured_labels"] >= 1
    # a fine-tuning run from pretrained weights needs only the sft rows: the same ones
    only = build([out], tmp_path / "sft-only", log=lambda m: None, measured=[results], pretrain=False)
    assert only["pretrain_rows"] is None and not (tmp_path / "sft-only" / "pretrain").exists()
    assert (tmp_path / "sft-only" / "sft" / "rows.jsonl").read_text() == (
        tmp_path / "rows" / "sft" / "rows.jsonl"
    ).read_text()
    # measured labels that beat dlight's script (here: there is none on llvm) can be trained on more often
    rows = lambda name: [json.loads(x) for x in (tmp_path / name / "sft" / "rows.jsonl").read_text().splitlines()]  # noqa: E731
    assert (
        records_main(
            [str(out), "--out", str(tmp_path / "x3"), "--measured", str(results), "--sft-only", "--label-repeat", "3"]
        )
        == 0
    )
    once, thrice = rows("sft-only"), rows("x3")
    repeated = [r for r in once if r["split"] == "train" and r.get("latency_us") and r["source"] != "dlight"]
    assert repeated and len(thrice) == len(once) + 2 * len(repeated)
    assert sorted({r["id"] for r in thrice} - {r["id"] for r in once}) == sorted(
        f"{r['id']}:again{k}" for r in repeated for k in (1, 2)
    )
    assert [r for r in thrice if r["split"] == "valid"] == [r for r in once if r["split"] == "valid"]
    # plain labels: the same rows, answers without the queries whose results nothing uses
    assert (
        records_main(
            [str(out), "--out", str(tmp_path / "plain"), "--measured", str(results), "--sft-only", "--plain-labels"]
        )
        == 0
    )
    from dragon_dsl import check_text
    from dragon_model.data import without_unused_queries

    plain = rows("plain")
    assert [r["id"] for r in plain] == [r["id"] for r in once]
    assert [r["script"] for r in plain] == [without_unused_queries(r["script"]) for r in once]
    assert not any(d.code == "DRG104" for r in plain for d in check_text(r["script"])[1])
    # --measured-only: the workloads nobody measured (their label would be dlight's script) are left out
    first = recs[0]["name"]
    one = tmp_path / "one.jsonl"
    one.write_text(
        "".join(x + "\n" for x in results.read_text().splitlines() if json.loads(x)["id"].rsplit("|", 1)[0] == first)
    )
    # (on llvm such a workload has no row either way: there is no dlight; the records are what is left out)
    assert len(recs) > 1
    kept = build([out], tmp_path / "one-only", log=lambda m: None, measured=[one], pretrain=False, measured_only=True)
    every = build([out], tmp_path / "one-all", log=lambda m: None, measured=[one], pretrain=False)
    assert (kept["workloads"], every["workloads"]) == (1, len(recs))
    assert {r["workload"] for r in rows("one-only")} == {first}
    assert [r for r in rows("one-all") if r["workload"] == first] == rows("one-only")
    # --exclude-families: no rows of those families' records
    family = once[0]["family"]
    assert (
        records_main(
            [
                str(out),
                "--out",
                str(tmp_path / "ex"),
                "--measured",
                str(results),
                "--sft-only",
                "--exclude-families",
                f"{family},no_such_family",
            ]
        )
        == 0
    )
    assert rows("ex") == [r for r in once if r["family"] != family] and len(rows("ex")) < len(once)
    with pytest.raises(SystemExit):
        records_main([str(out), "--out", str(tmp_path / "x"), "--measured-only"])
    assert "--measured-only needs --measured results" in capsys.readouterr().err
    # the next batch leaves out what was measured; filters narrow it
    again = tmp_path / "b2" / "batch.jsonl"
    assert records_main([str(out), "--batch", str(again), "--measured", str(packed)]) == 0
    assert again.read_text() == ""
    assert records_main([str(out), "--batch", str(again), "--per-space", "1"]) == 0
    lines = [json.loads(x) for x in again.read_text().splitlines()]
    assert len(lines) == sum(2 + bool(r.get("dlight")) for r in recs)  # one llvm sample, the baselines
    assert records_main([str(out), "--batch", str(again), "--require-space", "cuda-tensorcore"]) == 0
    assert again.read_text() == "", "llvm records have no tensor-core scripts"
    family = recs[0]["family"]
    assert records_main([str(out), "--batch", str(again), "--families", family]) == 0
    names = {json.loads(x)["workload"] for x in again.read_text().splitlines()}
    assert names == {f"workloads/{r['name']}.tvmscript" for r in recs if r["family"] == family}
    kept = again.read_text()
    with pytest.raises(SystemExit):  # a misspelt family is an error, not an empty batch
        records_main([str(out), "--batch", str(again), "--families", f"{family},no_such_family"])
    said = capsys.readouterr().err.split("--families: no record of no_such_family; the records' families: ")[-1]
    assert family in said.splitlines()[0].split(", ")
    assert again.read_text() == kept  # and the batch written before is left as it was
    for flag in (["--min-flops", "1e30"], ["--max-bytes", "1"]):
        assert records_main([str(out), "--batch", str(again), *flag]) == 0
        assert again.read_text() == ""
    build([out], tmp_path / "rows-all", log=lambda m: None, measured=[everything], pretrain=False)
    sft = [json.loads(x) for x in (tmp_path / "rows-all" / "sft" / "rows.jsonl").read_text().splitlines()]
    for r in recs:
        timed = {
            t: measured[candidate_id(r["name"], t)]
            for _s, t in label_candidates(r)
            if measured.get(candidate_id(r["name"], t)) is not None
        }
        if not timed:
            continue
        fastest = min(timed, key=timed.get)
        rows = [x for x in sft if x["workload"] == r["name"]]
        if not body_of_text(fastest):  # the program as written is fastest: nothing to teach
            assert rows == []
            continue
        label = next(x for x in rows if x["task"] == "construction")
        assert label["completion"].startswith(body_of_text(fastest)) and label["latency_us"] == timed[fastest]
        for x in rows:
            assert x["completion"] == label["completion"]
            if x["task"] == "improvement":
                assert body_of_text(x["prompt_script"]) != body_of_text(fastest)


def test_cut_seconds_scales_with_the_baseline():
    from dragon_model.api import RUN_FLOOR_S, SLOW_FACTOR, cut_seconds

    assert cut_seconds(1.0) == pytest.approx(RUN_FLOOR_S + 2 * 10 * SLOW_FACTOR * 1e-6)
    assert cut_seconds(1e6, cap_s=120.0) == 120.0  # a one-second baseline: the cap holds
    assert cut_seconds(1000.0) < cut_seconds(2000.0) < 120.0


def test_held_out_operators_are_written_and_never_generated(tmp_path, capsys):
    from dragon_dsl.cli.main import main
    from dragon_dsl.corpus.families import HELD_OUT_OPERATORS
    from dragon_dsl.corpus.pretrain import workload_specs

    held = {WorkloadSpec(f, p) for f, p in HELD_OUT_OPERATORS}
    assert len(held) == len(HELD_OUT_OPERATORS) >= 40
    assert not held & set(workload_specs(PretrainConfig(count=3000))), "a held-out operator was drawn for training"
    assert main(["workloads", "--held-out-operators", "-o", str(tmp_path)]) == 0
    rows = [json.loads(x) for x in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    assert len(rows) == len(held) and {r["family"] for r in rows} >= {"linear", "rotary", "attention_scores_decode"}


def test_rl_reward_is_relative_to_dlight_on_gpus_and_slow_kernels_fail():
    from types import SimpleNamespace

    from dragon_dsl.engine import Result, Status
    from dragon_model.rl import STAGE_REWARD, EngineReward

    asked = []

    class FakeEngine:  # a GPU engine whose dlight baseline runs in 10 us
        target = SimpleNamespace(is_gpu=True)

        def baseline(self, workload, kind):
            asked.append(kind)
            return Result(Status.OK, latency_us=10.0)

    reward = EngineReward(FakeEngine(), level="time")
    assert reward.score("wl", Result(Status.OK, latency_us=10.0)) == pytest.approx(0.8)
    assert reward.score("wl", Result(Status.OK, latency_us=5.0)) == pytest.approx(0.8 + 0.4 / 3)
    assert reward.score("wl", Result(Status.OK, latency_us=150.0)) == STAGE_REWARD["build"], "15x dlight is a failure"
    assert asked == ["dlight"], "one baseline per workload, dlight's on a GPU"


@pytest.mark.parametrize("elapsed, factor", [(0.0, 1.0), (50.0, 0.525), (100.0, 0.05), (150.0, 0.05)])
def test_time_limit_decays_the_rate_over_the_training_clock(monkeypatch, elapsed, factor):
    """Under --max-seconds the rate follows a cosine over the clock (the step-based schedule of
    a ceiling of epochs would barely decay), from the scheduler's rate to 5% of it."""
    from transformers import TrainerControl, TrainerState, TrainingArguments

    import dragon_model.train as train

    clock = {"now": 1000.0}
    monkeypatch.setattr(train.time, "time", lambda: clock["now"])
    limit = train._time_limit_callback()(seconds=110.0, t0=990.0)  # 10 s of preparation, 100 s of training
    args = TrainingArguments(output_dir="unused", report_to=[], use_cpu=True)
    limit.on_train_begin(args, TrainerState(), TrainerControl())
    clock["now"] += elapsed

    class Optimizer:
        param_groups = [{"lr": 2e-3}, {"lr": 1e-3}]

    control = limit.on_step_end(args, TrainerState(), TrainerControl(), optimizer=Optimizer)
    assert [g["lr"] for g in Optimizer.param_groups] == pytest.approx([2e-3 * factor, 1e-3 * factor])
    assert control.should_training_stop == (elapsed >= 100.0) == limit.fired


def test_gpu_samples_slow_before_they_run_are_no_construction_rows():
    """A sampled CUDA script whose kernel leaves the GPU idle compiles and runs: it is not taught as
    a way to build a schedule (--keep-slow keeps it), and stays a script improvement rows rewrite."""
    from pathlib import Path

    from dragon_model.records import rows_of_record

    root = Path(__file__).resolve().parents[2]
    head = 'workload "matmul_64.tvmscript"\ntarget "nvidia/nvidia-h100"\n\n'
    loops = 'b0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\n'
    bound = (
        head + loops + 'l4 = fuse(l1, l2)\nl5, l6 = split(l4, [None, 128])\nbind(l5, "blockIdx.x")\n'
        'bind(l6, "threadIdx.x")\n'
    )
    idle = head + loops + 'l4, l5 = split(l1, [16, 4])\nbind(l4, "threadIdx.x")\n'
    record = {
        "name": "matmul_64",
        "family": "matmul",
        "target": "nvidia/nvidia-h100",
        "workload": (root / "tests/data/workloads/matmul_64.tvmscript").read_text(),
        "scripts": [{"space": "cuda", "text": idle}, {"space": "cuda", "text": bound}],
        "dlight": {"text": bound},
    }
    pre, sft = rows_of_record(record)
    assert [r["source"] for r in pre] == ["cuda", "dlight"] and all("[16, 4]" not in r["completion"] for r in pre)
    assert any("[16, 4]" in r.get("prompt_script", "") for r in sft if r["task"] == "improvement")
    kept, _ = rows_of_record(record, keep_slow=True)
    assert len(kept) == 3
