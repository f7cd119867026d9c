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

from dragon_dsl.eval.discover import rebuilt_workload

ROOT = Path(__file__).resolve().parents[2]
REPORTS = sorted((ROOT / "benchmarks" / "results").glob("**/results.json"))
#: shown answers that a later check finds unsafe, each named by its workload, script and finding
#: (data/unsafe_shown_answers.json says why they stay in their reports)
UNSAFE = Path(__file__).resolve().parent / "data" / "unsafe_shown_answers.json"


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


def check_reports(paths, folder: Path, pool=None, seen: set | None = None, runs: int = 1) -> int:
    """Check every shown answer of the reports at PATHS with dragon-check (in RUNS calls, over POOL's
    processes when given; AssertionError naming the report and workload of each answer that fails);
    returns how many were checked (0: none to check here). SEEN: the (workload, script) pairs already
    checked (reports of one model share answers), skipped and added to.

    An answer whose header names its workload file is checked as `dragon-check` reads it: through
    the header, relative to the script, where its workload is written (a folder per report). The
    answers of every workload and report then share a few calls, and with them a few engines, whose
    worker start-up (a TVM import) costs more than a build. Any other answer gets a call of its own
    workload, with --workload."""
    from dragon_dsl import check_text
    from dragon_dsl.engine.nvcc import find_nvcc

    checked = 0
    by_header, others = [], []  # (report, workload entry, folder, answer files) of one workload each
    for i, path in enumerate(paths):
        report = json.loads(path.read_text(encoding="utf-8"))
        gpu = "llvm" not in json.dumps(report.get("target"))
        answers = list(shown_answers(report))
        if not answers or (gpu and find_nvcc() is None):
            continue
        if seen is not None:
            answers = [(e, s) for e, s in answers if (json.dumps(e, sort_keys=True), s) not in seen]
            seen.update((json.dumps(e, sort_keys=True), s) for e, s in answers)
        here = folder / f"report-{i}"
        here.mkdir(exist_ok=True)
        groups: dict = {}
        for n, (entry, script) in enumerate(answers):
            f = here / f"{entry['name']}-{n}.dragon"
            f.write_text(script, encoding="utf-8")
            named = check_text(script)[0].workload == f"{entry['name']}.tvmscript"
            groups.setdefault((entry["name"], named), (str(path), entry, here, []))[3].append(str(f))
        for (_, named), group in groups.items():
            (by_header if named else others).append(group)
        checked += len(answers)
    jobs = [(by_header[i::runs], False) for i in range(min(runs, len(by_header)))]
    jobs += [([group], True) for group in others]
    results = pool.map(_check_files, jobs) if pool is not None else map(_check_files, jobs)
    known = {
        (a["workload"], a["script_sha256"], a["code"])
        for a in json.loads(UNSAFE.read_text(encoding="utf-8"))["answers"]
    }
    for where, rc, found in results:
        errors = [e for e in found if (where[e["file"]].rsplit(": ", 1)[1], _sha(e["file"]), e["code"]) not in known]
        failed = sorted({where[e["file"]] for e in errors}) or sorted(set(where.values()))
        # exit code 1 is dragon-check's for findings: only the known ones may have given it
        assert (rc == 0 or (rc == 1 and found)) and not errors, f"{'; '.join(failed)}: {errors or rc}"
    return checked


def _sha(path: str) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_text(encoding="utf-8").encode()).hexdigest()[:16]


def _check_files(job) -> tuple:
    """({answer file: "report: workload"}, dragon-check's exit code, its errors) for one call over
    the answer files of some workloads; with WITH_WORKLOAD (one workload), `--workload` names its file."""
    import contextlib
    import io

    from dragon_dsl.cli.check import main as dragon_check

    groups, with_workload = job
    workloads = [rebuilt_workload(entry, here) for _, entry, here, _ in groups]
    option = ["--workload", str(workloads[0])] if with_workload else []
    where = {f: f"{report}: {entry['name']}" for report, entry, _, files in groups for f in files}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = dragon_check(["--level", "build", "--format", "json", *option, *where])
    return where, rc, [d for d in json.loads(out.getvalue()) if d.get("severity") == "error"]


def test_every_shown_answer_of_a_committed_report_builds(tmp_path):
    # one process per core, one dragon-check call in each: each answer is a TVM build and an nvcc call
    cores = os.cpu_count() or 1
    with ProcessPoolExecutor(cores, mp_context=multiprocessing.get_context("spawn")) as pool:
        checked = check_reports(REPORTS, tmp_path, pool, set(), runs=cores)
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
        path.write_text(
            json.dumps(
                {
                    "target": {"kind": "llvm"},
                    "workloads": [entry],
                    "measurements": [
                        {
                            "workload": spec.name,
                            "method": "model-first",
                            "status": "measured",
                            "task": "construction",
                            "candidates": [{"status": "ok", "latency_us": 1.0, "script": s} for s in scripts],
                        },
                        {
                            "workload": spec.name,
                            "method": "dlight",
                            "status": "measured",
                            "task": "construction",
                            "candidates": [{"status": "ok", "latency_us": 1.0, "script": bad}],
                        },
                    ],
                }
            )
        )
        return path

    assert check_reports([report(good, good)], tmp_path) == 1  # each distinct script once; dlight's are not the model's
    elsewhere = good.replace(f"{spec.name}.tvmscript", "elsewhere.tvmscript")
    assert check_reports([report(elsewhere)], tmp_path) == 1  # a header naming another file: --workload
    seen: set = set()
    assert check_reports([report(good, good)], tmp_path, seen=seen) == 1
    assert check_reports([report(good, good)], tmp_path, seen=seen) == 0  # checked for another report already
    with pytest.raises(AssertionError, match="no_such_block"):
        check_reports([report(good, bad)], tmp_path)
