"""`dragon eval` end to end on the CPU: two tiny llvm workloads, the unscheduled baseline,
MetaSchedule at 2 trials, one random design-space sample, and an existing script (the
improvement task). Checks the report's structure, that results.json's metrics are
recomputed from its raw measurements, and that a rerun measures nothing new."""

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from dragon_dsl import from_trace_json
from dragon_dsl.cli.main import main
from dragon_dsl.eval import metrics as M
from dragon_dsl.eval.report import PLOTS, SECTIONS

ROOT = Path(__file__).resolve().parents[2]
TARGET = '{"kind": "llvm", "num-cores": 2}'

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    wl = tmp_path_factory.mktemp("workloads")
    shutil.copy(ROOT / "tests/data/workloads/transpose_64x32.tvmscript", wl)
    shutil.copy(ROOT / "dragon_dsl/examples/matmul_256.tvmscript", wl)
    trace = json.loads((ROOT / "dragon_dsl/examples/matmul_256.llvm.trace.json").read_text())
    (wl / "matmul_256.dragon").write_text(
        from_trace_json(trace, workload="matmul_256.tvmscript", target=json.loads(TARGET))
    )
    out = tmp_path_factory.mktemp("out")
    argv = [
        "eval",
        "--workloads",
        str(wl),
        "--target",
        TARGET,
        "--methods",
        "unscheduled,metaschedule,ms-random",
        "--budgets",
        "2",
        "--repeat",
        "3",
        "--out",
        str(out),
    ]
    log = io.StringIO()
    with contextlib.redirect_stderr(log):
        assert main(argv) == 0
    first = json.loads((out / "results.json").read_text())
    first["_log"] = log.getvalue()
    report = (out / "report.md").read_text()
    databases = {p: p.stat().st_mtime_ns for p in out.glob("metaschedule/*/*/database_tuning_record.json")}
    assert main(argv) == 0
    second = json.loads((out / "results.json").read_text())
    return out, first, report, databases, second


def test_report_structure(runs):
    out, first, report, _, _ = runs
    for heading in SECTIONS:
        assert heading in report
    for png in PLOTS:
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    assert "dragon eval --workloads" in report and first["command"][:2] == ["dragon", "eval"]
    assert first["versions"]["tvm"] and "measured" in first["peaks"]["source"]
    names = {r["method"] for r in first["measurements"]}
    assert names == {"unscheduled", "metaschedule-2", "ms-random", "existing-script"}
    assert first["shards"] is None and "shard processes" not in report
    for w in ("matmul_256", "transpose_64x32"):
        assert f"| {w} |" in report


def test_measurements_are_real(runs):
    _, first, _, _, _ = runs
    assert first["cache"]["rows_before"] == 0 and first["cache"]["rows_after"] > 0
    for row in first["measurements"]:
        assert row["status"] == "measured", row
        assert row["candidates"], row
        for c in row["candidates"]:
            assert c["status"] == "ok", c  # the engine verified it against the reference
            assert c["latency_us"] > 0  # (a trace two methods both found is measured once: cached for the second)
        assert row["time_s"] > 0
    ms = [r for r in first["measurements"] if r["method"] == "metaschedule-2"]
    assert all(r["ms_records"] >= 1 and r["ms_valid"] >= 1 and r["trials"] == 2 for r in ms)
    improvement = [r for r in first["measurements"] if r["task"] == "improvement"]
    assert [(r["workload"], r["improves"]) for r in improvement] == [("matmul_256", "matmul_256.dragon")]


def test_metrics_recompute_from_raw(runs):
    _, first, _, _, _ = runs
    assert json.loads(json.dumps(M.summarize(first))) == first["metrics"]
    # and by hand: speed-up of each method over the unscheduled program from the raw latencies
    base = {
        r["workload"]: r["candidates"][0]["latency_us"] for r in first["measurements"] if r["method"] == "unscheduled"
    }
    for r in first["measurements"]:
        if r["task"] != "construction" or r["method"] == "unscheduled":
            continue
        best = min(c["latency_us"] for c in r["candidates"] if c["status"] == "ok")
        got = first["metrics"]["methods"][r["method"]]["over_unscheduled"]["per_task"][r["workload"]]
        assert got == pytest.approx(base[r["workload"]] / best)
    roof = first["metrics"]["methods"]["unscheduled"]["roofline_fraction"]["per_task"]
    for w in first["workloads"]:
        assert roof[w["name"]] == pytest.approx(w["roofline_us"] / base[w["name"]])


def test_log_has_a_line_per_measurement(runs):
    """Without a terminal (a device machine's log) each measurement says when it ended and how long it took."""
    lines = runs[1]["_log"].splitlines()
    for r in runs[1]["measurements"]:
        head = f"{r['method']} {r['task']} {r['workload']}: {r['status']}"
        mine = [x for x in lines if head in x]
        assert len(mine) == 1, (head, lines)
        assert mine[0].startswith("[") and mine[0].endswith(" s"), mine[0]


def test_rerun_reuses_the_caches(runs):
    out, first, _, databases, second = runs
    assert databases, "MetaSchedule kept no databases"
    assert second["cache"]["rows_before"] == second["cache"]["rows_after"] == first["cache"]["rows_after"]
    assert all(c["cached"] for r in second["measurements"] for c in r["candidates"])
    for p, mtime in databases.items():
        assert p.stat().st_mtime_ns == mtime  # no second search
    key = lambda r: (r["workload"], r["task"], r["method"])  # noqa: E731
    t1 = {key(r): r["time_s"] for r in first["measurements"]}
    assert {key(r): r["time_s"] for r in second["measurements"]} == t1
    assert second["peaks"] == first["peaks"]


def test_search_comparison_and_rendering_again(runs, tmp_path):
    """The report compares every method with the largest MetaSchedule budget, and `eval-report
    --results` computes the same metrics and writes the same report from results.json alone."""
    out, first, report, _, second = runs  # out holds the second (cached) run's files
    assert first["metrics"]["search"] == "metaschedule-2" and "## Against metaschedule-2" in report
    rs = first["metrics"]["methods"]["ms-random"]
    ms = {r["workload"]: r for r in first["measurements"] if r["method"] == "metaschedule-2"}
    for r in (r for r in first["measurements"] if r["method"] == "ms-random"):
        want = M.speedup(M.best_latency(ms[r["workload"]]["candidates"]), M.best_latency(r["candidates"]))
        assert rs["over_search"]["per_task"][r["workload"]] == pytest.approx(want)
    again = tmp_path / "again"
    assert main(["eval-report", "--results", str(out / "results.json"), "--to", str(again)]) == 0
    rendered = json.loads((again / "results.json").read_text())
    assert rendered["metrics"] == second["metrics"] and rendered["measurements"] == second["measurements"]
    assert rendered["rendered_by"][:3] == ["dragon", "eval-report", "--results"]
    assert (again / "report.md").read_text() == (out / "report.md").read_text()
    assert all((again / png).exists() for png in PLOTS)


def test_shards_fill_the_caches_and_the_final_run_measures_nothing_new(tmp_path):
    wl = tmp_path / "workloads"
    wl.mkdir()
    shutil.copy(ROOT / "tests/data/workloads/transpose_64x32.tvmscript", wl)
    shutil.copy(ROOT / "dragon_dsl/examples/matmul_256.tvmscript", wl)
    out = tmp_path / "out"
    argv = [
        "eval",
        "--workloads",
        str(wl),
        "--target",
        TARGET,
        "--methods",
        "unscheduled,ms-random",
        "--repeat",
        "3",
        "--out",
        str(out),
    ]
    for shard in ("0/2", "1/2"):
        assert main(argv + ["--shard", shard]) == 0
    parts = [json.loads((out / f"results-shard-{i}-of-2.json").read_text()) for i in (0, 1)]
    assert sorted(w["name"] for p in parts for w in p["workloads"]) == ["matmul_256", "transpose_64x32"]
    assert all(len(p["workloads"]) == 1 for p in parts) and not (out / "report.md").exists()
    merged_dir = tmp_path / "merged"
    assert main(["eval-report", str(out), "--to", str(merged_dir)]) == 0  # measures nothing
    merged = json.loads((merged_dir / "results.json").read_text())
    assert merged["merged_from"] == ["results-shard-0-of-2.json", "results-shard-1-of-2.json"]
    assert merged["shards"] == 2 and merged["missing_shards"] == [] and merged["deferred"] == []
    assert "--shard" not in merged["command"] and merged["command"][:2] == ["dragon", "eval"]
    assert sorted(json.dumps(r, sort_keys=True) for r in merged["measurements"]) == sorted(
        json.dumps(r, sort_keys=True) for p in parts for r in p["measurements"]
    )
    assert "Merged from 2 shard result files" in (merged_dir / "report.md").read_text()
    assert main(argv) == 0
    final = json.loads((out / "results.json").read_text())
    assert final["cache"]["rows_before"] == final["cache"]["rows_after"] > 0  # nothing measured again
    assert {w["name"] for w in final["workloads"]} == {"matmul_256", "transpose_64x32"}
    assert all(c["cached"] for r in final["measurements"] for c in r["candidates"])
    assert final["shards"] == 2 and "taken by 2 shard processes at once" in (out / "report.md").read_text()
    key = lambda r: (r["workload"], r["method"])  # noqa: E731
    shard_times = {key(r): r["time_s"] for p in parts for r in p["measurements"]}
    assert {key(r): r["time_s"] for r in final["measurements"]} == shard_times
    assert main(argv + ["--shard", "2/2"]) == 2
    assert main(["eval-report", str(out)]) == 2  # never replaces the complete run's results.json
    assert json.loads((out / "results.json").read_text()) == final


def test_stop_after_defers_a_tuning_run_that_would_end_too_late(tmp_path):
    """A finished run of the same method that took 1e6 s says the other workload's would not end
    within --stop-after: it is deferred (exit 3, no report), the cheap baseline is still measured,
    and the next run without the deadline measures it."""
    from dragon_dsl.engine import keys

    wl = tmp_path / "workloads"
    wl.mkdir()
    for src in ("tests/data/workloads/transpose_64x32.tvmscript", "dragon_dsl/examples/matmul_256.tvmscript"):
        shutil.copy(ROOT / src, wl)
    out = tmp_path / "out"
    slow = (
        out / "metaschedule" / f"matmul_256-{keys.load(str(wl / 'matmul_256.tvmscript')).hash[:8]}" / "metaschedule-2"
    )
    slow.mkdir(parents=True)
    (slow / "meta.json").write_text(json.dumps({"trials": 2, "strategy": "evolutionary", "wall_s": 1e6, "seed": 1}))
    argv = [
        "eval",
        "--workloads",
        str(wl),
        "--target",
        TARGET,
        "--methods",
        "unscheduled,metaschedule",
        "--budgets",
        "2",
        "--repeat",
        "3",
        "--out",
        str(out),
    ]
    assert main(argv + ["--stop-after", "600", "--shard", "0/1"]) == 3
    part = json.loads((out / "results-shard-0-of-1.json").read_text())
    assert part["deferred"] == [{"method": "metaschedule-2", "workload": "transpose_64x32"}]
    measured = {(r["workload"], r["method"]) for r in part["measurements"]}
    assert measured == {
        ("matmul_256", "unscheduled"),
        ("transpose_64x32", "unscheduled"),
        ("matmul_256", "metaschedule-2"),
    }
    assert main(["eval-report", str(out), "--to", str(tmp_path / "interim")]) == 0
    interim = (tmp_path / "interim" / "report.md").read_text()
    assert "Interim report: 1 measurement(s) are still to come" in interim
    assert "## Still to measure" in interim and "| metaschedule-2 | 1: transpose_64x32 |" in interim
    assert main(argv + ["--stop-after", "600"]) == 3 and not (out / "report.md").exists()
    assert main(argv) == 0
    final = json.loads((out / "results.json").read_text())
    assert final["deferred"] == [] and (out / "report.md").exists()
    row = next(
        r for r in final["measurements"] if r["workload"] == "transpose_64x32" and r["method"] == "metaschedule-2"
    )
    assert row["status"] == "measured" and row["ms_records"] >= 1


def test_an_interrupted_run_keeps_what_it_measured(tmp_path, monkeypatch):
    """SIGTERM (which `dragon` turns into SystemExit(143)) during the second method: the shard file
    still holds both baselines, the rest is deferred and the interruption named (exit 3, as a
    deadline's); the next run measures only what was left."""
    from dragon_dsl.eval import methods

    wl = tmp_path / "workloads"
    wl.mkdir()
    for src in ("tests/data/workloads/transpose_64x32.tvmscript", "dragon_dsl/examples/matmul_256.tvmscript"):
        shutil.copy(ROOT / src, wl)
    out = tmp_path / "out"
    argv = [
        "eval",
        "--workloads",
        str(wl),
        "--target",
        TARGET,
        "--methods",
        "unscheduled,ms-random",
        "--repeat",
        "3",
        "--out",
        str(out),
    ]

    def terminated(*_args, **_kwargs):
        raise SystemExit(143)

    with monkeypatch.context() as patch:
        patch.setattr(methods, "metaschedule", terminated)
        log = io.StringIO()
        with contextlib.redirect_stderr(log):
            assert main(argv + ["--shard", "0/1"]) == 3
    assert "deferred by the interruption (exit 143)" in log.getvalue()
    part = json.loads((out / "results-shard-0-of-1.json").read_text())
    assert part["interrupted"] == "exit 143"
    assert {(r["workload"], r["method"]) for r in part["measurements"]} == {
        ("matmul_256", "unscheduled"),
        ("transpose_64x32", "unscheduled"),
    }
    assert sorted(d["workload"] for d in part["deferred"] if d["method"] == "ms-random") == [
        "matmul_256",
        "transpose_64x32",
    ]
    assert main(argv) == 0
    final = json.loads((out / "results.json").read_text())
    assert "interrupted" not in final and final["deferred"] == []
    assert {r["method"] for r in final["measurements"]} == {"unscheduled", "ms-random"}
    assert all(c["cached"] for r in final["measurements"] if r["method"] == "unscheduled" for c in r["candidates"])


def test_k1_measures_the_first_answer_once(tmp_path, monkeypatch):
    """With --k 1 the best of 1 is the first answer: one model row per task (a second, identical
    row counted every task twice in the report's first-answer table)."""
    import dragon_model

    wl = tmp_path / "workloads"
    wl.mkdir()
    shutil.copy(ROOT / "tests/data/workloads/transpose_64x32.tvmscript", wl)
    (wl / "transpose_64x32.dragon").write_text('workload "transpose_64x32.tvmscript"\ntarget "llvm"\n')
    calls = []
    monkeypatch.setattr(dragon_model, "suggest", lambda **kw: calls.append(kw) or [""])
    out = tmp_path / "out"
    assert (
        main(
            [
                "eval",
                "--workloads",
                str(wl),
                "--target",
                TARGET,
                "--methods",
                "model",
                "--k",
                "1",
                "--repeat",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = json.loads((out / "results.json").read_text())["measurements"]
    model_rows = sorted((r["task"], r["method"]) for r in rows if r["method"].startswith("model"))
    assert model_rows == [("construction", "model-first"), ("improvement", "model-first")]
    assert len(calls) == 2


def test_a_workload_without_a_reference_is_left_out_and_said(tmp_path):
    """A workload whose program as written fails as the verifier's reference (here it divides by the
    zeros input set) is left out of the evaluation, named under the inputs left out, and the
    other workloads are evaluated: one such task ended a whole run over a network's tasks."""
    wl = tmp_path / "workloads"
    wl.mkdir()
    shutil.copy(ROOT / "tests/data/workloads/transpose_64x32.tvmscript", wl)
    shutil.copy(Path(__file__).parent / "data/no_reference/int_divide.tvmscript", wl)
    out = tmp_path / "out"
    argv = ["eval", "--workloads", str(wl), "--target", TARGET, "--methods", "unscheduled", "--repeat", "1"]
    assert main([*argv, "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert [w["name"] for w in results["workloads"]] == ["transpose_64x32"]
    assert {r["workload"] for r in results["measurements"]} == {"transpose_64x32"}
    (problem,) = results["problems"]
    assert problem.startswith("int_divide: no reference (the program as written): ") and "SIGFPE" in problem
    assert "int_divide: no reference" in (out / "report.md").read_text()
