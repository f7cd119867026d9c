"""The search driver: MetaSchedule over a workload folder, through one warm Engine, resumable.

    run = SearchRun("runs/r1", "workloads/", SearchConfig(target={"kind": "llvm", "num-cores": 2}, budget=32))
    summary = run.run(shard=(0, 1), limit=None)

Layout of a run folder (the contract other parts read):

    RUN/run.json                 the configuration (target, budget, seed, search knobs, TVM version,
                                 device, engine settings, workloads folder); a restart with another
                                 configuration is refused (RunConfigError)
    RUN/records/<workload>.json  one finished workload (written atomically: tmp + fsync + rename)
    RUN/work/<workload>/         MetaSchedule's work dir while that workload is searched; wiped
                                 and redone when a killed run restarts, removed once its record exists

A workload is done exactly when its record exists, so a run killed at any moment
(SIGKILL included) restarts where it stopped: finished workloads are skipped, the
unfinished one is searched again from scratch, nothing is lost or written twice.
Every workload gets a fixed seed derived from the run seed and its structural hash.

Determinism (measured on TVM 0.27, llvm): with `cost_model="random"` (seeded here) and
one search round (`budget <= num_trials_per_iter`) the candidates and their order are
identical between runs. With more rounds, or the xgb cost model, later rounds depend on
measured latencies (the evolutionary search starts from the best measured schedules),
so candidates after the first round differ between runs.

Shards (`shard=(i, n)`) pick workloads by a stable hash of their name, so `n` processes
on different machines can share one run folder.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dragon_dsl.language.files import create_text, stray_temporaries, write_json
from dragon_dsl.tvm.tuning import tvm_version

RUN_FORMAT = 1
STATUSES = ("ok", "replay_error", "build_error", "launch_error", "timeout", "numeric_mismatch", "unwritten_output")


class RunConfigError(ValueError):
    """The run folder belongs to another configuration, or the input is unusable."""


# --- configuration ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchConfig:
    """What decides a run's results. `workers` is left out on purpose: shards on machines with
    different core counts share one run."""

    target: object  # a tag or a target dict (what Engine and tvm.target.Target take)
    budget: int  # MetaSchedule trials per workload (max_trials_global)
    seed: int = 0
    num_trials_per_iter: int = 16
    cost_model: str = "xgb"  # "xgb" or "random" (seeded; see the module docstring)
    population_size: int = 128  # EvolutionarySearch (default 512)
    genetic_num_iters: int = 2  # (default 4)
    init_min_unmeasured: int = 32  # (default 50)
    num_tuning_cores: int = 1  # MetaSchedule's own threads; fixed so the search is reproducible
    device: str = "local"
    timeout_s: float = 60.0
    cache: bool = True  # the engine's results cache (RUN/engine-cache.sqlite)
    baselines: bool = True

    def __post_init__(self):
        if not isinstance(self.budget, int) or self.budget < 1:
            raise RunConfigError(f"budget must be a positive integer, got {self.budget!r}")
        if self.num_trials_per_iter < 1:
            raise RunConfigError("num_trials_per_iter must be at least 1")
        if self.cost_model not in ("xgb", "random"):
            raise RunConfigError(f"cost_model {self.cost_model!r}: expected 'xgb' or 'random'")
        if self.population_size < 2 or self.genetic_num_iters < 0 or self.init_min_unmeasured < 1:
            raise RunConfigError("population_size >= 2, genetic_num_iters >= 0, init_min_unmeasured >= 1")

    def to_json(self) -> dict:
        return json.loads(json.dumps(asdict(self)))


def workload_seed(run_seed: int, workload_hash: str) -> int:
    """The fixed seed of one workload's search (31 bits: MetaSchedule takes an int32-range seed)."""
    digest = hashlib.sha256(f"{run_seed}:{workload_hash}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def shard_of(name: str, n: int) -> int:
    """The shard a workload belongs to: a stable hash of its name (not Python's salted hash)."""
    return int(hashlib.sha256(name.encode()).hexdigest()[:12], 16) % n


def parse_shard(text: str) -> tuple:
    """'i/n' -> (i, n)."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise RunConfigError(f"--shard {text!r}: expected i/n, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise RunConfigError(f"--shard {text!r}: need 0 <= i < n")
    return i, n


# --- workloads ----------------------------------------------------------------------------------
def read_manifest(workloads_dir) -> list:
    """The manifest rows of a workload folder (name, family, params, hash), checked
    (`dragon_dsl.corpus.manifest`); a problem is a RunConfigError."""
    from dragon_dsl.corpus.manifest import ManifestError
    from dragon_dsl.corpus.manifest import read_manifest as read_rows

    try:
        return read_rows(workloads_dir)
    except ManifestError as exc:
        raise RunConfigError(str(exc)) from None


# --- MetaSchedule (through the TVM bridge, dragon_dsl.tvm.tuning) ------------------------------------


def candidate_entry(trace, build_error, run_error, run_secs) -> dict:
    """One record candidate from what MetaSchedule saw. The engine's builder and runner write
    errors as 'status: message'; the latency is the median of the runs, as the engine reports it."""
    error = build_error if build_error else run_error
    if error:
        head = str(error).split(":", 1)[0].strip()
        return {"trace": trace, "status": head if head in STATUSES else "error", "latency_us": None}
    secs = [float(s) for s in run_secs] if run_secs is not None else []
    if not secs or any(s >= 1e9 for s in secs):  # MetaSchedule's marker of a failed run
        return {"trace": trace, "status": "error", "latency_us": None}
    return {"trace": trace, "status": "ok", "latency_us": statistics.median(secs) * 1e6}


# --- the run --------------------------------------------------------------------------------------
@dataclass
class Summary:
    done: int = 0  # records written by this call
    skipped: int = 0  # records already there
    failed: int = 0  # workloads whose search failed (this call)
    trials: int = 0
    failed_candidates: int = 0
    wall_s: float = 0.0
    per_workload_s: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


class SearchRun:
    def __init__(self, run_dir, workloads_dir, config: SearchConfig, workers: int | None = None):
        self.dir = Path(run_dir)
        self.workloads_dir = Path(workloads_dir).resolve()
        self.config = config
        self.workers = workers
        self.records_dir = self.dir / "records"
        self.work_root = self.dir / "work"

    # --- run.json -------------------------------------------------------------------------------
    def _identity(self) -> dict:
        return {
            "format": RUN_FORMAT,
            "config": self.config.to_json(),
            "tvm_version": tvm_version(),
            "workloads_dir": str(self.workloads_dir),
        }

    def open(self) -> dict:
        """Create run.json, or check that the existing one has this configuration."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.records_dir.mkdir(exist_ok=True)
        for stray in stray_temporaries(self.records_dir):  # a write cut short by a kill; its record is redone
            stray.unlink(missing_ok=True)
        path = self.dir / "run.json"
        mine = self._identity()
        if not path.exists():
            data = {**mine, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            create_text(path, json.dumps(data, indent=1))  # two shards starting at once agree on one file
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunConfigError(f"{path}: not JSON ({exc.msg})") from None
        diffs = _differences({k: stored.get(k) for k in mine}, mine)
        if diffs:
            raise RunConfigError(
                f"{self.dir} was started with another configuration ({'; '.join(diffs)}); "
                f"use a new --out folder, or the same settings"
            )
        return stored

    # --- selection ------------------------------------------------------------------------------
    def select(self, shard=(0, 1), limit: int | None = None) -> list:
        """This shard's manifest rows, in manifest order; `limit` keeps the first N of the shard."""
        i, n = shard
        rows = [r for r in read_manifest(self.workloads_dir) if shard_of(r["name"], n) == i]
        return rows[:limit] if limit is not None else rows

    def record_path(self, name: str) -> Path:
        return self.records_dir / f"{name}.json"

    def pending(self, rows: list, retry_failed: bool = False) -> list:
        out = []
        for row in rows:
            path = self.record_path(row["name"])
            if path.exists():
                if not retry_failed:
                    continue
                try:
                    if json.loads(path.read_text(encoding="utf-8")).get("status") == "ok":
                        continue
                except json.JSONDecodeError:  # cannot happen with atomic writes; redo it anyway
                    pass
            out.append(row)
        return out

    # --- searching --------------------------------------------------------------------------------
    def run(
        self, shard=(0, 1), limit: int | None = None, retry_failed: bool = False, progress=None, engine=None
    ) -> Summary:
        """Search every pending workload of the shard. `progress(event, **info)` is told of each
        candidate batch and finished workload (the CLI draws with it)."""
        self.open()
        rows = self.select(shard, limit)
        todo = self.pending(rows, retry_failed)
        summary = Summary(skipped=len(rows) - len(todo))
        if progress:
            progress("start", total=len(rows), done=summary.skipped)
        if not todo:
            return summary
        t0 = time.perf_counter()
        own = engine is None
        if own:
            from dragon_dsl.engine import Engine

            cache = str(self.dir / "engine-cache.sqlite") if self.config.cache else False
            engine = Engine(
                self.config.target,
                device=self.config.device,
                workers=self.workers,
                timeout_s=self.config.timeout_s,
                cache=cache,
            )
        try:
            for row in todo:
                t1 = time.perf_counter()
                record = self.search_one(engine, row, progress)
                write_json(self.record_path(row["name"]), record)
                shutil.rmtree(self.work_root / row["name"], ignore_errors=True)
                summary.done += 1
                summary.failed += record["status"] != "ok"
                summary.trials += record["trials"]
                summary.failed_candidates += sum(c["status"] != "ok" for c in record["candidates"])
                summary.per_workload_s.append(time.perf_counter() - t1)
                if progress:
                    progress("workload", record=record)
        finally:
            if own:
                engine.close()
        summary.wall_s = time.perf_counter() - t0
        return summary

    def search_one(self, engine, row: dict, progress=None) -> dict:
        """Search one workload from scratch; always returns a record (status 'failed' with the
        error when MetaSchedule or the engine gave up)."""
        from dragon_dsl.engine import builder_and_runner
        from dragon_dsl.tvm.target import tvm_target
        from dragon_dsl.tvm.tuning import (
            capture_callback,
            cost_model,
            default_measure_callbacks,
            evolutionary_search,
            tune,
        )
        from dragon_dsl.tvm.workload import load_workload

        cfg = self.config
        name = row["name"]
        wl_file = f"{name}.tvmscript"
        wl_path = self.workloads_dir / wl_file
        seed = workload_seed(cfg.seed, str(row["hash"]))
        work_dir = self.work_root / name
        shutil.rmtree(work_dir, ignore_errors=True)  # what a killed run left is redone
        work_dir.mkdir(parents=True)
        record = {
            "workload": name,
            "workload_hash": str(row["hash"]),
            "family": row["family"],
            "params": row["params"],
            "workload_file": wl_file,
            "target": engine.target.spec,
            "status": "ok",
            "error": None,
            "budget": cfg.budget,
            "trials": 0,
            "wall_s": 0.0,
            "seed": seed,
            "candidates": [],
            "baselines": {"unscheduled_us": None, "dlight_us": None},
        }
        t0 = time.perf_counter()
        candidates: list = []  # every measured candidate, in measurement order

        def on_batch(batch):
            entries = [candidate_entry(*measured) for measured in batch]
            candidates.extend(entries)
            if progress:
                progress("batch", candidates=entries)

        capture = capture_callback(on_batch)
        try:
            mod = load_workload(wl_path)
            builder, runner = builder_and_runner(engine, workload=mod)
            if cfg.baselines:
                record["baselines"] = measure_baselines(engine, str(wl_path))
            target = tvm_target(engine.target.spec)
            # only warnings reach the terminal; MetaSchedule's log files stay in work_dir
            tune(
                mod,
                target,
                work_dir,
                max_trials_global=cfg.budget,
                num_trials_per_iter=cfg.num_trials_per_iter,
                builder=builder,
                runner=runner,
                cost_model=cost_model(cfg.cost_model, seed),
                strategy=evolutionary_search(cfg.population_size, cfg.genetic_num_iters, cfg.init_min_unmeasured),
                measure_callbacks=default_measure_callbacks() + [capture],
                num_tuning_cores=cfg.num_tuning_cores,
                seed=seed,
            )
        except Exception as exc:  # TVM, the workload parser and the engine raise their own types
            record["status"] = "failed"
            record["error"] = f"{type(exc).__name__}: {_last_line(exc)}"
        record["candidates"] = candidates
        record["trials"] = len(candidates)
        if record["status"] == "ok" and not any(c["status"] == "ok" for c in candidates):
            record["status"] = "failed"
            record["error"] = "no candidate passed" if candidates else "MetaSchedule produced no candidate"
        record["wall_s"] = time.perf_counter() - t0
        return record


def baseline_kinds(target) -> list:
    """The baselines measured for a target: the unscheduled program on CPUs, dlight on GPUs (the
    unscheduled program has no thread binding and never builds for a GPU)."""
    return ["dlight"] if target.is_gpu else ["unscheduled"]


def baselines_of(results) -> dict:
    """{"unscheduled_us", "dlight_us"} from the Results of `baseline_kinds` (None where one failed)."""
    out = {"unscheduled_us": None, "dlight_us": None}
    for kind, result in results:
        if result.ok:
            out[f"{kind}_us"] = result.latency_us
    return out


def measure_baselines(engine, workload) -> dict:
    """A workload's baseline latencies (`baselines_of`)."""
    kinds = baseline_kinds(engine.target)
    return baselines_of(zip(kinds, engine.run([], baselines=[(workload, k) for k in kinds])))


def read_folder_json(folder, name: str, what: str) -> dict:
    """The JSON file `name` that makes `folder` a `what` (a search run's run.json, a corpus's
    manifest.json); a RunConfigError when it is not there."""
    path = Path(folder) / name
    if not path.is_file():
        raise RunConfigError(f"{folder}: not {what} (no {name})")
    return json.loads(path.read_text(encoding="utf-8"))


def read_records(run_dir) -> tuple:
    """(run.json, records sorted by workload name) of a run folder."""
    run = read_folder_json(run_dir, "run.json", "a search run")
    records = [
        json.loads(path.read_text(encoding="utf-8")) for path in sorted((Path(run_dir) / "records").glob("*.json"))
    ]
    return run, records


def _differences(stored: dict, mine: dict, prefix: str = "") -> list:
    out = []
    for key in sorted(set(stored) | set(mine)):
        a, b = stored.get(key), mine.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: was {json.dumps(a)}, now {json.dumps(b)}")
    return out


def _last_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(exc).__name__
