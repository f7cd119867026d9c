"""benchmarks/gpu_host/eval_state.sh: the evaluation's state, packed so that it outlives a GPU
machine. Kept: complete MetaSchedule databases (with meta.json), the model's answers, the caches'
JSON files, logs, shard results and the results cache less its references; not kept: a database
still being written, MetaSchedule's logs. Unpack never replaces a state that is there."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_host" / "eval_state.sh"

FILES = {  # path in the state -> kept by pack
    "metaschedule/mm-1/metaschedule-16/meta.json": True,
    "metaschedule/mm-1/metaschedule-16/database_workload.json": True,
    "metaschedule/mm-1/metaschedule-16/database_tuning_record.json": True,
    "metaschedule/mm-1/metaschedule-16/logs/tvm.s_tir.meta_schedule.logging.task_0.log": False,
    "metaschedule/mm-1/metaschedule-64/database_workload.json": False,  # no meta.json: unfinished
    "metaschedule/mm-1/metaschedule-64/database_tuning_record.json": False,
    "model/mm-construction-n1-0123456789ab.json": True,
    "cache/wall_times.json": True,
    "cache/vendor.json": True,
    "logs/shard-0.log": True,
    "results-shard-0-of-4.json": True,
    "scratch.npz": False,
}


def _sh(state: Path, *args) -> str:
    env = {**os.environ, "EVAL_STATE": str(state)}
    done = subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _state(folder: Path) -> None:
    from dragon_dsl.engine.cache import ResultsCache
    from dragon_dsl.engine.result import Result, Status, Task

    for rel in FILES:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps({"file": rel}))
    cache = ResultsCache(folder / "cache" / "results.sqlite")
    cache.store(
        "w",
        "t",
        "cuda",
        "local",
        Task(workload="w", trace=[[], []], level="time"),
        Result(Status.OK, n_checked=5, latencies_us=[3.0], level="time"),
    )
    cache.put_reference("w", "c", b"\0" * 200_000)
    cache.close()


def test_pack_keeps_what_a_later_call_needs(tmp_path):
    state = tmp_path / "here" / "eval-other-name"
    _state(state)
    out = _sh(state, "pack", str(tmp_path / "s.tgz"))
    assert "1 complete MetaSchedule databases, 1 model answer files, the results cache" in out
    with tarfile.open(tmp_path / "s.tgz") as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
        assert all(n.startswith("eval-state/") for n in names)
        kept = {n[len("eval-state/") :] for n in names}
        assert kept == {rel for rel, keep in FILES.items() if keep} | {"cache/results.sqlite"}
        tar.extract("eval-state/cache/results.sqlite", tmp_path / "x", filter="data")
    db = sqlite3.connect(tmp_path / "x" / "eval-state" / "cache" / "results.sqlite")
    assert db.execute("SELECT COUNT(*) FROM results").fetchone() == (1,)
    assert db.execute("SELECT COUNT(*) FROM refs").fetchone() == (0,)  # references are computed again


def test_unpack_restores_and_never_replaces(tmp_path):
    state = tmp_path / "a" / "eval-state"
    _state(state)
    _sh(state, "pack", str(tmp_path / "s.tgz"))
    fresh = tmp_path / "b" / "eval-state"
    assert "resuming from" in _sh(fresh, "unpack", str(tmp_path / "s.tgz"))
    for rel, keep in FILES.items():
        assert (fresh / rel).exists() == keep, rel
    (fresh / "model" / "mm-construction-n1-0123456789ab.json").write_text("newer")
    assert "nothing unpacked" in _sh(fresh, "unpack", str(tmp_path / "s.tgz"))
    assert (fresh / "model" / "mm-construction-n1-0123456789ab.json").read_text() == "newer"
