"""The results cache: one sqlite file, so that nothing is measured twice.

Rows are keyed by (workload structural hash, trace hash, target canonical JSON,
device string). A stored result answers a new request when it is at least as
strong:
  * a success decided at stage S answers requests up to S; a verify answer also
    needs at least as many random input sets, a timing the same timing knobs;
  * a failure decided at stage F answers every request that would reach F
    (a build error answers "time" requests too); a timeout is stored with its limits and the
    machine's load: it answers only requests with limits no longer, and one measured on a
    starved machine only while the machine is starved again;
  * a success answers only while the compile checks are those it passed
    (`dragon_dsl.tvm.compile.CHECKS_VERSION`): a schedule a newer check rejects
    is built again, and rejected.
Reference outputs of the verifier are stored beside, per workload and verifier
configuration, as `.npz` bytes: in the database up to MAX_REFERENCE_BYTES, larger ones as files
in a folder next to it (`results-refs/` beside `results.sqlite`), or as the folder of parts the
build workers computed (`put_reference_parts`: copied as they are, never merged). A large
reference is the costly one to compute again: 7 of the 50 held-out operators' references are over
the limit (a 512 x 11008 x 4096 fp16 GEMM's among them), and each resumed evaluation of that set
spent 270 s on the CPU before its first measurement while they were not kept.

The file is `$DRAGON_CACHE_DIR/results.sqlite`, else `~/.cache/little-dragon/results.sqlite`.
Only the engine's parent process opens it; WAL mode lets several engines share it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

from dragon_dsl.engine.result import Result, Status, Task, level_rank
from dragon_dsl.language.files import cache_root
from dragon_dsl.tvm.compile import CHECKS_VERSION

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    workload TEXT NOT NULL, trace TEXT NOT NULL, target TEXT NOT NULL, device TEXT NOT NULL,
    stage TEXT NOT NULL, config TEXT NOT NULL, result TEXT NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (workload, trace, target, device));
CREATE TABLE IF NOT EXISTS refs (
    workload TEXT NOT NULL, config TEXT NOT NULL, data BLOB NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (workload, config));
"""


def default_path() -> Path:
    return cache_root() / "results.sqlite"


#: run-queue length per core (the 1-minute load average over the cores) above which the machine
#: was starved: a build or run that timed out then may finish in time on an idle one
LOADED = 1.0


def cpu_load() -> float:
    """This machine's 1-minute load average per core (0.0 where the system does not tell)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):
        return 0.0


def _config(task: Task) -> dict:
    return {"seeds": task.seeds, "checks": CHECKS_VERSION, **task.timing_config()}


def answers(stored: Result, stored_config: dict, task: Task, limits: dict | None = None, load: float = 0.0) -> bool:
    """Whether a stored result (decided at `stored.level`) answers `task`, asked with the engine's
    timeouts `limits` on a machine whose load per core is `load` now. A stored timeout answers only
    a request whose every limit is at most the one it was measured with (a longer limit must
    measure again), and one measured on a starved machine (load per core over LOADED) only while
    this one is starved too: a build that timed out beside a training run at nice 19 took 9 s on
    its own, and the stored timeout had failed a later check on the idle machine."""
    want = level_rank(task.level)
    have = level_rank(stored.level)
    if stored.status is Status.TIMEOUT:
        measured = stored_config.get("limits") or {}
        if stored_config.get("load", 0.0) > LOADED >= load:
            return False
        return have <= want and bool(limits) and all(k in measured and v <= measured[k] for k, v in limits.items())
    if stored.status is not Status.OK:
        return have <= want
    if stored_config.get("checks", 1) != CHECKS_VERSION:
        return False
    if have < want:
        return False
    if want >= level_rank("verify") and stored_config.get("seeds", 0) < task.seeds:
        return False
    if want == level_rank("time"):
        return all(stored_config.get(k) == v for k, v in task.timing_config().items())
    return True


class ResultsCache:
    def __init__(self, path=None):
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._db.commit()

    def lookup(
        self, workload: str, trace: str, target: str, device: str, task: Task, limits: dict | None = None
    ) -> Result | None:
        row = self._db.execute(
            "SELECT config, result FROM results WHERE workload=? AND trace=? AND target=? AND device=?",
            (workload, trace, target, device),
        ).fetchone()
        if row is None:
            return None
        result = Result.from_json(json.loads(row[1]))
        config = json.loads(row[0])
        if not answers(result, config, task, limits, cpu_load() if "load" in config else 0.0):
            return None
        result.cached = True
        return result

    def store(
        self,
        workload: str,
        trace: str,
        target: str,
        device: str,
        task: Task,
        result: Result,
        limits: dict | None = None,
    ) -> None:
        """Keep a result. A timeout says as much about the limit as about the kernel: it is kept
        with the engine's timeouts `limits` (answering only requests with limits no longer) and the
        machine's load per core, and not at all without limits. Kept, it spares a rerun the wait (a
        hanging kernel holds the GPU that every process sharing it waits for)."""
        config = _config(task)
        if result.status is Status.TIMEOUT:
            if not limits:
                return
            config["limits"] = dict(limits)
            config["load"] = round(cpu_load(), 2)
        data = result.to_json()
        data["cached"] = False
        self._db.execute(
            "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (workload, trace, target, device, result.level, json.dumps(config), json.dumps(data), time.time()),
        )
        self._db.commit()

    def get_reference(self, workload: str, config: str) -> bytes | None:
        """The reference's `.npz` bytes (a folder of parts merged), or None."""
        row = self._db.execute("SELECT data FROM refs WHERE workload=? AND config=?", (workload, config)).fetchone()
        if row is not None:
            return bytes(row[0])
        path = self.reference_path(workload, config)
        if path is None:
            return None
        if path.is_dir():
            from dragon_dsl.engine import reference

            return reference.to_bytes(reference.load(path))
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    def reference_path(self, workload: str, config: str) -> Path | None:
        """A large reference where it is kept, as `reference.load` reads it (a file, or a folder of
        parts), or None: it is read from there, not copied (the device workers load it themselves)."""
        file = self.reference_file(workload, config)
        folder = file.with_suffix("")
        if folder.is_dir():
            return folder
        return file if file.is_file() else None

    # SQLite refuses a blob over its length limit (1e9 bytes by default; "string or blob too
    # big"): references larger than this go to a file of their own (`reference_file`).
    MAX_REFERENCE_BYTES = 256 << 20

    def reference_file(self, workload: str, config: str) -> Path:
        """Where a reference too large for the database is kept."""
        key = hashlib.sha256(f"{workload}\0{config}".encode()).hexdigest()[:32]
        return self.path.parent / f"{self.path.stem}-refs" / f"{key}.npz"

    def put_reference(self, workload: str, config: str, data: bytes) -> bool:
        """Store a verifier reference; False when it could not be stored (a full disk for a large one)."""
        if len(data) > self.MAX_REFERENCE_BYTES:
            return self._put_reference_file(self.reference_file(workload, config), data)
        try:
            self._db.execute("INSERT OR REPLACE INTO refs VALUES (?, ?, ?, ?)", (workload, config, data, time.time()))
        except (sqlite3.DataError, sqlite3.OperationalError) as exc:
            if "too big" not in str(exc):
                raise
            return self._put_reference_file(self.reference_file(workload, config), data)
        self._db.commit()
        return True

    def put_reference_parts(self, workload: str, config: str, folder: Path) -> bool:
        """Store a reference computed in parts (a folder of part0.npz, part1.npz, ...: `reference.load`):
        up to MAX_REFERENCE_BYTES merged into the database, larger as a copy of the folder (of its
        one part: the reference's file), file by file, without reading the arrays (an RMSNorm of
        7671 x 2560: 471 MB, which the engine's process once read, merged and wrote again). The copy
        appears whole or not at all (a temporary folder, then a rename); one already kept stays (a
        reference is deterministic). False when it could not be stored."""
        folder = Path(folder)
        parts = sorted(folder.glob("part*.npz"))
        if sum(p.stat().st_size for p in parts) <= self.MAX_REFERENCE_BYTES:
            from dragon_dsl.engine import reference

            return self.put_reference(workload, config, reference.to_bytes(reference.load(folder)))
        file = self.reference_file(workload, config)
        dest = file if len(parts) == 1 else file.with_suffix("")  # one part: the file is the reference
        if dest.exists():
            return True
        tmp = dest.with_name(f"{dest.name}.{os.getpid()}.tmp")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            if len(parts) == 1:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(parts[0], tmp)
            else:
                tmp.mkdir(parents=True)
                for part in parts:
                    shutil.copyfile(part, tmp / part.name)
            os.replace(tmp, dest)
        except OSError:
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
            return dest.exists()  # another engine stored it first
        return True

    @staticmethod
    def _put_reference_file(path: Path, data: bytes) -> bool:
        """Write DATA to PATH whole or not at all (a temporary file, then a rename: a reader, or a
        run killed halfway, never sees part of a reference)."""
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            return False
        return True

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def close(self) -> None:
        self._db.close()
