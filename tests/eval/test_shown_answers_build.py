"""Every answer a committed evaluation report shows (a model candidate it counts as verified) passes
`dragon-check --level build` on its own workload, rebuilt from the report's family and parameters.

Reports written before candidates carried their scripts cannot be checked; when no committed
report can, the test says so (skip) rather than passing on nothing.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORTS = sorted((ROOT / "benchmarks" / "results").glob("**/results.json"))


def shown_answers(report: dict):
    """(workload entry, script) of every verified model candidate, each distinct script once."""
    workloads = {w["name"]: w for w in report.get("workloads", [])}
    seen = set()
    for row in report.get("measurements", []):
        if not row["method"].startswith("model") or row.get("status") != "measured":
            continue
        for c in row.get("candidates") or []:
            key = (row["workload"], c.get("script"))
            if c["status"] == "ok" and c.get("script") and key not in seen:
                seen.add(key)
                yield workloads[row["workload"]], c["script"]


def _workload_file(entry: dict, folder: Path) -> Path:
    from dragon_dsl.corpus.generator import WorkloadSpec
    from dragon_dsl.tvm.workload import workload_text

    path = folder / f"{entry['name']}.tvmscript"
    if not path.exists():
        spec = WorkloadSpec(entry["family"], tuple(sorted(entry["params"].items())))
        path.write_text(workload_text(spec.build()), encoding="utf-8")
    return path


def check_report(path: Path, folder: Path, pool=None, seen: set | None = None) -> int:
    """Check every shown answer of the report at PATH with dragon-check (one call per workload,
    over POOL's processes when given; AssertionError naming the first answer that fails); returns
    how many were checked (0: none to check here). SEEN: the (workload, script) pairs already
    checked (of another report: reports of one model share answers), skipped and added to."""
    from dragon_dsl.engine.nvcc import find_nvcc

    report = json.loads(path.read_text(encoding="utf-8"))
    gpu = "llvm" not in json.dumps(report.get("target"))
    answers = list(shown_answers(report))
    if not answers or (gpu and find_nvcc() is None):
        return 0
    if seen is not None:
        answers = [(e, s) for e, s in answers if (json.dumps(e, sort_keys=True), s) not in seen]
        seen.update((json.dumps(e, sort_keys=True), s) for e, s in answers)
    by_workload: dict = {}
    for n, (entry, script) in enumerate(answers):
        f = folder / f"{entry['name']}-{n}.dragon"
        f.write_text(script, encoding="utf-8")
        by_workload.setdefault(entry["name"], (entry, []))[1].append(str(f))
    jobs = [(entry, files, folder) for entry, files in by_workload.values()]
    results = pool.map(_check_workload, jobs) if pool is not None else map(_check_workload, jobs)
    for name, rc, errors in results:
        assert rc == 0 and not errors, f"{path}: {name}: {errors or rc}"
    return len(answers)


def _check_workload(job) -> tuple:
    """(workload name, dragon-check's exit code, its errors) for one workload's answer files."""
    import contextlib
    import io

    from dragon_dsl.cli.check import main as dragon_check

    entry, files, folder = job
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = dragon_check(["--level", "build", "--format", "json", "--workload",
                           str(_workload_file(entry, folder)), *files])
    return entry["name"], rc, [d for d in json.loads(out.getvalue()) if d.get("severity") == "error"]


def test_every_shown_answer_of_a_committed_report_builds(tmp_path):
    # one process per core: each answer is a TVM build and an nvcc call
    with ProcessPoolExecutor(os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        seen: set = set()
        checked = sum(check_report(path, tmp_path, pool, seen) for path in REPORTS)
    if not checked:
        pytest.skip("no committed report carries the scripts of its answers (or nvcc is missing for a GPU report)")


def test_the_check_rebuilds_the_workload_and_catches_an_answer_that_does_not_build(tmp_path):
    from dragon_dsl.corpus.generator import generate

    spec = generate(1, seed=0, families=["elementwise"])[0]
    entry = {"name": spec.name, "family": spec.family, "params": dict(spec.params)}
    good = f'workload "{spec.name}.tvmscript"\ntarget "llvm"\n'
    bad = good + 'b0 = get_sblock("no_such_block")\n'

    def report(*scripts):
        path = tmp_path / f"results-{len(scripts)}.json"
        path.write_text(json.dumps({"target": {"kind": "llvm"}, "workloads": [entry], "measurements": [
            {"workload": spec.name, "method": "model-first", "status": "measured", "task": "construction",
             "candidates": [{"status": "ok", "latency_us": 1.0, "script": s} for s in scripts]},
            {"workload": spec.name, "method": "dlight", "status": "measured", "task": "construction",
             "candidates": [{"status": "ok", "latency_us": 1.0, "script": bad}]}]}))
        return path

    assert check_report(report(good, good), tmp_path) == 1      # each distinct script once; dlight's are not the model's
    seen: set = set()
    assert check_report(report(good, good), tmp_path, seen=seen) == 1
    assert check_report(report(good, good), tmp_path, seen=seen) == 0   # checked for another report already
    with pytest.raises(AssertionError, match="no_such_block"):
        check_report(report(good, bad), tmp_path)
