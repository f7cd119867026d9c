"""`dragon measure` and its batch layer (dragon_dsl/engine/batchfile.py): malformed lines are rows
named by line, a killed run resumes with every id exactly once, identical sources are measured once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dragon_dsl.engine.batchfile import INVALID, default_id, read_batch, read_results

from .engine_helpers import LLVM, ROOT, fixture_traces, workload

TARGET = json.dumps(LLVM)
BROKEN_LINE = '{"id": "broken", "trace": [[], []'
BROKEN = default_id(3, BROKEN_LINE)  # its JSON does not say its id: the line number and its hash


def _write(path: Path, lines) -> Path:
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines), encoding="utf-8")
    return path


def _rows(path: Path) -> list:
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def _complete_rows(path: Path) -> list:
    """The rows a writer has finished (a line being written has no newline yet)."""
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").split("\n")[:-1] if ln.strip()]


def _same_source(trace: list) -> list:
    """TRACE with a GetSBlock of its first block in front: another trace (hash), the same schedule."""
    insts, decisions = trace
    first = next(inst for inst in insts if inst[0] == "GetSBlock")
    extra = ["GetSBlock", [], list(first[2]), ["b_same"]]
    return [[extra] + insts, [[index + 1, decision] for index, decision in decisions]]


# --- the batch file and the results file (no TVM) ----------------------------------------------------
def test_every_malformed_line_is_named_by_line_and_column(tmp_path):
    wl = workload("matmul_64")
    batch = _write(
        tmp_path / "b.jsonl",
        [
            {"id": "good", "workload": wl, "trace": [[], []]},
            '{"id": "cut", "workload": ',  # bad JSON
            {"id": "nocand", "workload": wl},  # no script or trace
            {"id": "both", "workload": wl, "trace": [[], []], "script": "x"},
            {"id": "nowl", "trace": [[], []]},  # no workload
            {"id": "gone", "workload": "missing.tvmscript", "trace": [[], []]},
            {"id": "syntax", "workload": wl, "script": 'b0 = get_sblock("C"\n'},
            {"id": "good", "workload": wl, "trace": [[], []]},  # the id again
            "[1, 2]",
            "",
            {"workload": wl, "trace": "[[], []]", "colour": 1},
        ],
    )
    cands = read_batch(batch)
    by_line = {c.line: c for c in cands}
    assert sorted(by_line) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 11]  # the blank line is no candidate
    assert by_line[1].problem == "" and by_line[1].id == "good"
    assert by_line[2].problem.startswith(f"{batch}:2:27: not JSON")
    assert by_line[2].id == default_id(2, '{"id": "cut", "workload": ')
    assert "exactly one of 'script'" in by_line[3].problem and by_line[3].problem.startswith(f"{batch}:3:")
    assert "exactly one of 'script'" in by_line[4].problem
    assert "missing 'workload'" in by_line[5].problem
    assert "no such file" in by_line[6].problem
    assert by_line[7].problem.startswith(f"{batch}:7: the script has errors: <script>:1:")
    assert "already used on line 1" in by_line[8].problem and by_line[8].id != "good"
    assert "expected a JSON object" in by_line[9].problem
    assert "unknown field(s) 'colour'" in by_line[11].problem
    assert len({c.id for c in cands}) == len(cands)


def test_a_script_file_names_its_workload_in_its_header(tmp_path):
    from dragon_dsl import from_trace_json

    trace = fixture_traces("matmul_64", LLVM, limit=1)[0]
    (tmp_path / "wl.tvmscript").write_text(Path(workload("matmul_64")).read_text())
    (tmp_path / "a.dragon").write_text(from_trace_json(trace, workload="wl.tvmscript", target=LLVM))
    batch = _write(tmp_path / "b.jsonl", [{"id": "a", "script": "a.dragon"}])
    (cand,) = read_batch(batch)
    assert cand.problem == ""
    assert cand.workload == str((tmp_path / "wl.tvmscript").resolve())
    assert cand.trace == json.loads(json.dumps(trace))


def test_a_cut_last_line_is_dropped_and_the_rest_kept(tmp_path):
    out = tmp_path / "r.jsonl"
    out.write_text('{"id": "a", "status": "ok"}\n{"id": "b", "status": "ok"}\n{"id": "c", "sta')
    rows, dropped = read_results(out)
    assert [r["id"] for r in rows] == ["a", "b"] and dropped
    assert out.read_text() == '{"id": "a", "status": "ok"}\n{"id": "b", "status": "ok"}\n'
    assert read_results(out) == (rows, False)


# --- measuring (TVM, worker processes) --------------------------------------------------------------
def _batch(tmp_path: Path) -> Path:
    traces = fixture_traces("matmul_64", LLVM, limit=2) + fixture_traces("softmax_64", LLVM, limit=2)
    wls = [workload("matmul_64")] * 2 + [workload("softmax_64")] * 2
    lines = [{"id": f"c{i}", "workload": wl, "trace": t} for i, (wl, t) in enumerate(zip(wls, traces))]
    lines.insert(2, BROKEN_LINE)
    lines.append({"id": "same", "workload": wls[0], "trace": _same_source(traces[0])})
    lines.append({"id": "again", "workload": wls[1], "trace": traces[1]})
    return _write(tmp_path / "batch.jsonl", lines)


@pytest.mark.slow
def test_malformed_line_reported_the_rest_measured_and_identical_sources_measured_once(llvm_engine, tmp_path):
    from dragon_dsl.engine.batchfile import measure_batch

    batch = _batch(tmp_path)
    out = tmp_path / "results.jsonl"
    jobs, dups = llvm_engine.build_jobs, llvm_engine.duplicate_sources
    llvm_engine.dedupe_sources = True
    try:
        summary = measure_batch(batch, out, llvm_engine, "verify", chunk=16)
    finally:
        llvm_engine.dedupe_sources = False
    rows = {r["id"]: r for r in _rows(out)}
    assert sorted(rows) == sorted(["again", BROKEN, "c0", "c1", "c2", "c3", "same"])
    assert rows[BROKEN]["status"] == INVALID and rows[BROKEN]["message"].startswith(f"{batch}:3:")
    for cid in ("c0", "c1", "c2", "c3"):
        assert rows[cid]["status"] == "ok", rows[cid]
        assert rows[cid]["n_checked"] > 0 and not rows[cid]["duplicate_of"]
    # another trace, the same lowered source: not built again, c0's verdict, named after c0
    assert rows["same"]["duplicate_of"] == "c0"
    assert (rows["same"]["status"], rows["same"]["n_checked"]) == (rows["c0"]["status"], rows["c0"]["n_checked"])
    assert rows["same"]["trace_hash"] != rows["c0"]["trace_hash"]
    assert rows["again"]["duplicate_of"] == "c1"  # the same trace twice
    # five build jobs (c0..c3 and same; again is c1's trace, never sent), one of them not compiled
    assert (llvm_engine.build_jobs - jobs, llvm_engine.duplicate_sources - dups) == (5, 1)
    assert summary.counts == {"ok": 6, INVALID: 1} and summary.duplicates == 2
    # a second run finds everything done
    again = measure_batch(batch, out, llvm_engine, "verify")
    assert again.skipped == 7 and again.written == 0 and len(_rows(out)) == 7


@pytest.mark.slow
def test_a_time_limit_stops_between_engine_calls_and_a_rerun_measures_the_rest(llvm_engine, tmp_path):
    from dragon_dsl.engine.batchfile import measure_batch

    batch = _batch(tmp_path)
    out = tmp_path / "results.jsonl"
    # past its time at once: the first call (2 lines, c0 and c1) still runs, so every rerun gets on
    first = measure_batch(batch, out, llvm_engine, "verify", chunk=2, seconds=1e-9)
    assert sorted(r["id"] for r in _rows(out)) == ["c0", "c1"] and first.left == 5
    assert first.to_json()["left"] == 5
    rest = measure_batch(batch, out, llvm_engine, "verify", chunk=2)
    assert rest.skipped == 2 and rest.left == 0 and rest.written == 5
    ids = [r["id"] for r in _rows(out)]
    assert sorted(ids) == sorted(set(ids)) == sorted(["again", BROKEN, "c0", "c1", "c2", "c3", "same"])


def _measure_cmd(batch: Path, out: Path, *extra) -> list:
    return [
        sys.executable,
        "-m",
        "dragon_dsl.cli.main",
        "measure",
        str(batch),
        "--target",
        TARGET,
        "--out",
        str(out),
        "--level",
        "verify",
        "--workers",
        "2",
        "--chunk",
        "1",
        *extra,
    ]


def _run_until_measured(cmd: list, out: Path, env: dict) -> subprocess.Popen:
    """`dragon measure` started in its own process group, returned once it has written a measured
    row (the invalid one comes first); killed if it fails the wait."""
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 240
        while sum(r["status"] != INVALID for r in _complete_rows(out)) < 1:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "no result within 240 s"
            time.sleep(0.05)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return proc


@pytest.mark.slow
def test_sigkill_then_restart_gives_every_id_once_with_the_uninterrupted_verdicts(llvm_engine, tmp_path):
    from dragon_dsl.engine.batchfile import measure_batch

    batch = _batch(tmp_path)
    out = tmp_path / "results.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = _run_until_measured(_measure_cmd(batch, out, "--json"), out, env)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _rows(out)
    assert len(before) < 7, "the run ended before the kill: nothing was interrupted"
    with open(out, "a") as f:
        f.write('{"id": "c3", "status": "o')  # a row cut by the kill
    done = subprocess.run(
        _measure_cmd(batch, out, "--json"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["dropped_torn_line"] and summary["skipped"] == len(before)
    rows = _rows(out)
    ids = [r["id"] for r in rows]
    assert sorted(ids) == sorted(set(ids)) == sorted(["again", BROKEN, "c0", "c1", "c2", "c3", "same"])
    assert rows[: len(before)] == before  # nothing written before the kill was lost
    # the verdicts of one run without a kill (in this process: its engine is warm)
    whole = tmp_path / "whole.jsonl"
    measure_batch(batch, whole, llvm_engine, "verify")

    def verdicts(rs):
        return {r["id"]: (r["status"], r.get("n_checked"), r.get("max_abs_err"), r.get("max_rel_err")) for r in rs}

    assert verdicts(rows) == verdicts(_rows(whole))


@pytest.mark.slow
def test_sigterm_removes_the_engines_working_folder_and_keeps_the_results(tmp_path):
    """`timeout` sends SIGTERM to the command's process group: the engine's folder (reference
    inputs, builds) must not stay on the disk, and what was written stays for the rerun."""
    batch = _batch(tmp_path)
    out, scratch = tmp_path / "results.jsonl", tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch)}
    proc = _run_until_measured(_measure_cmd(batch, out), out, env)
    try:
        assert list(scratch.glob("dragon-engine-*")), "the engine works in TMPDIR"
        before = _complete_rows(out)
        os.killpg(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not list(scratch.glob("dragon-engine-*"))
    assert _complete_rows(out)[: len(before)] == before


def test_usage_errors_exit_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "dragon_dsl.cli.main",
            "measure",
            str(tmp_path / "nope.jsonl"),
            "--target",
            TARGET,
            "--out",
            str(tmp_path / "r.jsonl"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 2 and "no such batch file" in missing.stderr
    no_time = subprocess.run(
        [
            sys.executable,
            "-m",
            "dragon_dsl.cli.main",
            "measure",
            str(tmp_path / "nope.jsonl"),
            "--target",
            TARGET,
            "--out",
            str(tmp_path / "r.jsonl"),
            "--seconds",
            "0",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert no_time.returncode == 2 and "--seconds must be positive" in no_time.stderr
    no_out = subprocess.run(
        [sys.executable, "-m", "dragon_dsl.cli.main", "measure", str(tmp_path / "nope.jsonl"), "--target", TARGET],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert no_out.returncode == 2 and "--out" in no_out.stderr


def test_one_device_worker_per_gpu_that_cuda_visible_devices_shows():
    from dragon_dsl.engine.targets import visible

    gpus = [("NVIDIA H200", "GPU-aaa"), ("NVIDIA H200", "GPU-bbb"), ("NVIDIA H200", "GPU-ccc")]
    assert visible(gpus, None) == gpus
    assert visible(gpus, "2,0") == [gpus[2], gpus[0]]
    assert visible(gpus, "GPU-bbb") == [gpus[1]]
    assert visible(gpus, "1,7,2") == [gpus[1]]  # CUDA stops at the first entry it cannot match
    assert visible(gpus, "") == [] and visible(gpus, "-1") == []
