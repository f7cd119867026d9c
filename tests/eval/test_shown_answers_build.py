"""Every answer a committed evaluation report showed (a model candidate it counted as verified) passes
`dragon-check --level build` on its own workload, rebuilt from the report's family and parameters.

The answers are a fixed, committed fixture (`data/shown_answers/answers.jsonl.xz`: each distinct
shown answer of every report committed under benchmarks/results/, also of reports since deleted
there), so that trimming benchmarks/results/ cannot shrink the test. A report added there must add
its answers to the fixture (`DRAGON_UPDATE_GOLDEN=1` appends them); a test fails until it does.
"""

from __future__ import annotations

import json
import lzma
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from dragon_dsl.eval.discover import rebuilt_workload

ROOT = Path(__file__).resolve().parents[2]
REPORTS = sorted((ROOT / "benchmarks" / "results").glob("**/results.json"))
DATA = Path(__file__).resolve().parent / "data"
#: one JSON line per answer: {"report": where it was shown, "target", "workload": {name, family,
#: params}, "script"}
ANSWERS = DATA / "shown_answers" / "answers.jsonl.xz"
#: shown answers that a later check finds unsafe, each named by its workload, script and finding
#: (data/unsafe_shown_answers.json says why they stay in their reports)
UNSAFE = DATA / "unsafe_shown_answers.json"


def shown_answers(report: dict, source: str = "") -> list:
    """The fixture's rows of every verified model candidate of REPORT, each distinct script once."""
    workloads = {w["name"]: w for w in report.get("workloads", [])}
    out, seen = [], set()
    for row in report.get("measurements", []):
        if not row["method"].startswith("model") or row.get("status") != "measured":
            continue
        for c in row.get("candidates") or []:
            key = (row["workload"], c.get("script"))
            if c["status"] == "ok" and c.get("script") and key not in seen:
                seen.add(key)
                w = workloads[row["workload"]]
                entry = {"name": w["name"], "family": w["family"], "params": w["params"]}
                out.append({"report": source, "target": report.get("target"), "workload": entry, "script": c["script"]})
    return out


def _key(answer: dict) -> tuple:
    return json.dumps(answer["workload"], sort_keys=True), answer["script"]


def read_answers(path: Path = ANSWERS) -> list:
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_answers(answers: list, path: Path = ANSWERS) -> None:
    with lzma.open(path, "wt", encoding="utf-8", preset=9) as f:
        f.writelines(json.dumps(a, sort_keys=True) + "\n" for a in answers)


def check_answers(answers, folder: Path, pool=None, seen: set | None = None, runs: int = 1) -> int:
    """Check ANSWERS (the fixture's rows) with dragon-check (in RUNS calls, over POOL's processes when
    given; AssertionError naming the report and workload of each answer that fails); returns how many
    were checked (0: none to check here). SEEN: the (workload, script) pairs already checked, skipped
    and added to.

    An answer whose header names its workload file is checked as `dragon-check` reads it: through
    the header, relative to the script, where its workload is written (a folder per report). The
    answers of every workload and report then share a few calls, and with them a few engines, whose
    worker start-up (a TVM import) costs more than a build. Any other answer gets a call of its own
    workload, with --workload."""
    from dragon_dsl import check_text
    from dragon_dsl.engine.nvcc import find_nvcc

    nvcc = find_nvcc() is not None
    answers = [a for a in answers if nvcc or "llvm" in json.dumps(a["target"])]
    if seen is not None:
        answers = [a for a in answers if _key(a) not in seen]
        seen.update(_key(a) for a in answers)
    by_report: dict = {}
    for a in answers:
        by_report.setdefault(a["report"], []).append(a)
    by_header, others = [], []  # (report, workload entry, folder, answer files) of one workload each
    for i, (report, group) in enumerate(by_report.items()):
        here = folder / f"report-{i}"
        here.mkdir(exist_ok=True)
        groups: dict = {}
        for n, a in enumerate(group):
            entry, script = a["workload"], a["script"]
            f = here / f"{entry['name']}-{n}.dragon"
            f.write_text(script, encoding="utf-8")
            named = check_text(script)[0].workload == f"{entry['name']}.tvmscript"
            groups.setdefault((entry["name"], named), (report, entry, here, []))[3].append(str(f))
        for (_, named), g in groups.items():
            (by_header if named else others).append(g)
    jobs = [(by_header[i::runs], False) for i in range(min(runs, len(by_header)))]
    jobs += [([g], True) for g in others]
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
    return len(answers)


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


def test_every_shown_answer_of_a_committed_report_is_in_the_fixture():
    answers = read_answers()
    have = {_key(a) for a in answers}
    assert len(have) == len(answers), "an answer is in the fixture twice"
    missing = []
    for path in REPORTS:
        source = str(path.relative_to(ROOT))
        missing += [
            a for a in shown_answers(json.loads(path.read_text(encoding="utf-8")), source) if _key(a) not in have
        ]
        have.update(_key(a) for a in missing)
    if missing and os.environ.get("DRAGON_UPDATE_GOLDEN") == "1":
        write_answers(answers + missing)
        return
    assert not missing, (
        f"{len(missing)} shown answers of committed reports are not in {ANSWERS.name} "
        f"({sorted({a['report'] for a in missing})}): DRAGON_UPDATE_GOLDEN=1 adds them"
    )


def test_every_answer_of_the_fixture_builds(tmp_path):
    answers = read_answers()
    assert len(answers) >= 1239  # the fixture only grows
    # one process per core, one dragon-check call in each: each answer is a TVM build and an nvcc call
    cores = os.cpu_count() or 1
    with ProcessPoolExecutor(cores, mp_context=multiprocessing.get_context("spawn")) as pool:
        checked = check_answers(answers, tmp_path, pool, set(), runs=cores)
    if not checked:
        pytest.skip("nvcc is missing: every answer of the fixture is a GPU answer")
    assert checked == len(answers)


def test_the_check_rebuilds_the_workload_and_catches_an_answer_that_does_not_build(tmp_path):
    from dragon_dsl.corpus.generator import generate

    spec = generate(1, seed=0, families=["elementwise"])[0]
    entry = {"name": spec.name, "family": spec.family, "params": dict(spec.params)}
    good = f'workload "{spec.name}.tvmscript"\ntarget "llvm"\n'
    bad = good + 'b0 = get_sblock("no_such_block")\n'

    def report(*scripts):
        return {
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

    assert len(shown_answers(report(good, good))) == 1  # each distinct script once; dlight's are not the model's
    assert check_answers(shown_answers(report(good, good), "r"), tmp_path) == 1
    elsewhere = good.replace(f"{spec.name}.tvmscript", "elsewhere.tvmscript")
    assert check_answers(shown_answers(report(elsewhere), "r"), tmp_path) == 1  # a header naming another file
    seen: set = set()
    assert check_answers(shown_answers(report(good), "r"), tmp_path, seen=seen) == 1
    assert check_answers(shown_answers(report(good), "r"), tmp_path, seen=seen) == 0  # checked already
    with pytest.raises(AssertionError, match="no_such_block"):
        check_answers(shown_answers(report(good, bad), "r"), tmp_path)


def test_the_fixture_round_trips(tmp_path):
    answers = read_answers()[:3]
    write_answers(answers, tmp_path / "a.jsonl.xz")
    assert read_answers(tmp_path / "a.jsonl.xz") == answers
