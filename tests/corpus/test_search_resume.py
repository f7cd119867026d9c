"""The must-show test: `dragon search` killed with SIGKILL mid-run and restarted ends with the same
records, and the same corpus, as an uninterrupted run; nothing is lost or duplicated.

What "the same" compares. Measured latencies differ between any two runs, so equality is over
everything that is not a measurement:
  * the set of workloads with a record, one record file per workload and no stray files;
  * per workload: status, error, workload hash, family, params, workload file, target, budget,
    seed, trial count, and the candidates' traces and statuses in measurement order
    (not latency_us, wall_s or baselines);
  * of the corpora built from both runs: the example ids, their tasks, splits, workloads and
    workload texts for construction examples, and no duplicate ids. (Which candidate is best,
    and so the improvement examples, depends on measured latencies and is not compared.)
Search is deterministic for a seed under the settings used here (one search round, the seeded
random cost model); that was measured, and this test holds it.
"""

from __future__ import annotations

import json
import os
import subprocess

from .conftest import ROOT, SPECS, build_config, kill_when, run_search, search_command

COMPARED = (
    "workload",
    "workload_hash",
    "family",
    "params",
    "workload_file",
    "target",
    "status",
    "error",
    "budget",
    "trials",
    "seed",
)


def comparable(run_dir) -> dict:
    records = {}
    for path in sorted((run_dir / "records").iterdir()):
        assert path.suffix == ".json" and not path.name.startswith("."), f"stray file {path.name}"
        rec = json.loads(path.read_text())
        assert path.stem == rec["workload"] and rec["workload"] not in records
        records[rec["workload"]] = {
            **{k: rec[k] for k in COMPARED},
            "candidates": [(json.dumps(c["trace"]), c["status"]) for c in rec["candidates"]],
        }
    return records


def test_sigkill_mid_run_then_restart_equals_uninterrupted(tiny_workloads, searched_run, tmp_path, corpus_engine):
    out = tmp_path / "killed"
    kill_when(search_command(tiny_workloads, out), lambda: list(out.glob("records/*.json")), "a record")
    finished = {p.stem for p in (out / "records").glob("*.json")}
    assert 1 <= len(finished) < len(SPECS), "killed mid-run: some workloads done, some not"
    for path in (out / "records").glob("*.json"):
        json.loads(path.read_text())  # every record on disk is whole

    summary = run_search(tiny_workloads, out)
    assert summary["skipped"] == len(finished), "finished workloads are not searched again"
    assert summary["done"] == len(SPECS) - len(finished)
    assert not list((out / "work").iterdir()), "work dirs of finished workloads are removed"

    again, reference = comparable(out), comparable(searched_run)
    assert set(again) == set(reference) == {n for n in again} and len(again) == len(SPECS)
    assert again == reference
    assert all(r["trials"] == len(r["candidates"]) <= r["budget"] and r["candidates"] for r in again.values())

    # a third start has nothing left to do
    assert run_search(tiny_workloads, out)["skipped"] == len(SPECS)

    from dragon_dsl.corpus.build import build_corpus, load_corpus

    cfg = build_config()
    rows = {}
    for name, run_dir in (("killed", out), ("uninterrupted", searched_run)):
        build_corpus([run_dir], tmp_path / f"corpus-{name}", cfg, engine=corpus_engine)
        _, splits = load_corpus(tmp_path / f"corpus-{name}")
        ids = [r["id"] for s in splits.values() for r in s]
        assert len(ids) == len(set(ids)), "no duplicate examples"
        rows[name] = {
            (r["id"], r["task"], r["split"], r["workload"], r["workload_text"])
            for s in splits.values()
            for r in s
            if r["task"] == "construction"
        }
    assert rows["killed"] == rows["uninterrupted"] and len(rows["killed"]) == len(SPECS)


def test_restart_with_another_configuration_is_refused(tiny_workloads, searched_run):
    cmd = search_command(tiny_workloads, searched_run)
    cmd[cmd.index("--budget") + 1] = str(7)
    proc = subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert proc.returncode == 2
    assert "another configuration" in proc.stderr and "budget: was 3, now 7" in proc.stderr
