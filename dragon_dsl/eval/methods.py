"""The methods an evaluation compares. Each returns, per workload and task, one measurement row:

    {"workload", "task": "construction"|"improvement", "method",
     "status": "measured"|"not_available"|"not_applicable", "reason",
     "candidates": [{"status", "latency_us", "cached", "message", ...}],   # in the method's order
     "time_s": wall seconds from start to the method's verified answer (None: none verified),
     ...method-specific fields}

Every candidate goes through the measurement engine twice: `verify` (timed: this is the
time to a verified kernel) and then `time` for the verified ones, so latencies of all
methods come from the same timer. When the engine answers from its results cache the
verify wall time is not a measurement, so the time recorded when it was measured is read
back from `WallTimes` (a JSON file beside the cache).

Methods: the unscheduled workload and dlight's default GPU rules (engine baselines);
MetaSchedule at a trial budget and one random sample of its design space (`tune_tir`
through EngineBuilder/EngineRunner, which verify every candidate; the database of each
(workload, budget) is kept under OUT_DIR/metaschedule and reused by a rerun); the
vendor library through PyTorch (vendor.py); and the model (`dragon_model.suggest`), when
that function exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from dragon_dsl.eval.metrics import best_latency
from dragon_dsl.files import write_json


# --- shared state --------------------------------------------------------------------------------
def update_json(path: Path, updates: dict) -> dict:
    """Merge `updates` into the JSON object stored at `path`, under an exclusive lock, and return the
    merged object: several shards of one evaluation (`--shard`) write the same cache files."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        data.update(updates)
        write_json(path, data, sort_keys=True)
    return data


class WallTimes:
    """Wall times of method runs, by key, kept across reruns (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.data = json.loads(self.path.read_text(encoding="utf-8")) if self.path.exists() else {}

    def resolve(self, key: str, measured_s: float, fresh: bool) -> float:
        """The wall time of a run: the one just measured when it was real work, else the stored one."""
        if fresh or key not in self.data:
            self.data = update_json(self.path, {key: measured_s})
        return self.data[key]


@dataclass
class Context:
    engine: object
    out_dir: Path
    walls: WallTimes
    seeds: int = 3
    repeat: int = 5
    seed: int = 20260101
    k: int = 8
    model_path: Optional[str] = None
    import_s: float = 0.0                        # MetaSchedule's imports, paid once, reported as start-up
    hashes: dict = field(default_factory=dict)   # workload path -> structural hash
    target: object = None                        # engine/targets.py's Target (the engine's, when there is one)
    generation_version: Optional[int] = None     # measure the answers of this decoder version (None: the model's)

    def __post_init__(self):
        if self.target is None and self.engine is not None:
            self.target = self.engine.target

    def whash(self, path) -> str:
        key = str(path)
        if key not in self.hashes:
            from dragon_dsl.engine import keys

            self.hashes[key] = keys.load(key).hash
        return self.hashes[key]


def _row(entry, task: str, method: str, status: str = "measured", reason: str = "", **extra) -> dict:
    return {"workload": entry.name, "task": task, "method": method, "status": status, "reason": reason,
            "candidates": [], "time_s": None, **extra}


def _cand(result) -> dict:
    return {"status": result.status.value, "latency_us": result.latency_us if result.ok else None,
            "cached": result.cached, "message": result.message[:300], "max_abs_err": result.max_abs_err,
            "level": result.level}


def measure(ctx: Context, entry, traces: list, key: str, extra_s: float = 0.0) -> tuple:
    """(candidate dicts, time_s) for traces on a workload: verify all, time the verified ones.
    time_s = extra_s + verify wall time, or None when nothing verified."""
    t0 = time.perf_counter()
    verified = ctx.engine.measure(str(entry.path), traces, level="verify", seeds=ctx.seeds)
    wall = time.perf_counter() - t0
    fresh = any(not r.cached for r in verified)
    ok = [i for i, r in enumerate(verified) if r.ok]
    timed = ctx.engine.measure(str(entry.path), [traces[i] for i in ok], level="time", seeds=ctx.seeds,
                               repeat=ctx.repeat) if ok else []
    final = list(verified)
    for i, r in zip(ok, timed, strict=True):
        final[i] = r
    wall = ctx.walls.resolve(key, wall, fresh)
    cands = [_cand(r) for r in final]
    return cands, (extra_s + wall if best_latency(cands) is not None else None)


# --- baselines -------------------------------------------------------------------------------------
def baseline(ctx: Context, entry, kind: str) -> dict:
    if kind == "dlight" and not ctx.engine.target.is_gpu:
        return _row(entry, "construction", kind, "not_applicable", "dlight schedules GPU targets only")
    t0 = time.perf_counter()
    verified = ctx.engine.baseline(str(entry.path), kind=kind, level="verify", seeds=ctx.seeds)
    wall = ctx.walls.resolve(f"{ctx.whash(entry.path)}|{kind}", time.perf_counter() - t0, not verified.cached)
    result = verified
    if verified.ok:
        result = ctx.engine.baseline(str(entry.path), kind=kind, level="time", seeds=ctx.seeds, repeat=ctx.repeat)
    row = _row(entry, "construction", kind)
    row["candidates"] = [_cand(result)]
    row["time_s"] = wall if result.ok else None
    return row


# --- MetaSchedule ------------------------------------------------------------------------------------
def ms_name(budget: int, strategy: str = "evolutionary") -> str:
    return "ms-random" if strategy == "replay-trace" else f"metaschedule-{budget}"


def ms_workload_folder(ctx: Context, entry) -> Path:
    """OUT_DIR/metaschedule/<workload>-<hash>: one workload's MetaSchedule runs, a folder per method."""
    return ctx.out_dir / "metaschedule" / f"{entry.name}-{ctx.whash(entry.path)[:8]}"


def ms_folder(ctx: Context, entry, name: str) -> Path:
    """OUT_DIR/metaschedule/<workload>-<hash>/<method>: one MetaSchedule database and its meta.json."""
    return ms_workload_folder(ctx, entry) / name


def _meta(folder: Path, budget: int, strategy: str) -> Optional[dict]:
    """The meta.json of a finished tuning run of that budget and strategy, else None."""
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if meta.get("trials") == budget and meta.get("strategy") == strategy else None


def expected_tune_s(ctx: Context, entry, budget: int, strategy: str = "evolutionary") -> Optional[float]:
    """Seconds this workload's tuning at `budget` is expected to take: 0 when its database is complete;
    else its own run at a smaller budget scaled by the ratio the workloads with both runs show (by the
    ratio of trials when none has both); else the slowest finished run of the same method; None when
    nothing is known yet."""
    name = ms_name(budget, strategy)
    if _meta(ms_folder(ctx, entry, name), budget, strategy) is not None:
        return 0.0
    if strategy != "evolutionary":
        walls = [m["wall_s"] for m in _finished(ctx, name, budget, strategy).values()]
        return max(walls) if walls else None
    own = ms_workload_folder(ctx, entry)
    smaller = sorted((m["trials"], m["wall_s"]) for m in (_meta(own / ms_name(b), b, strategy) for b in range(1, budget))
                     if m is not None) if own.is_dir() else []
    same = _finished(ctx, name, budget, strategy)
    if smaller:
        b, wall = smaller[-1]
        lower = _finished(ctx, ms_name(b), b, strategy)
        ratios = sorted(same[w]["wall_s"] / lower[w]["wall_s"] for w in same.keys() & lower.keys()
                        if lower[w]["wall_s"] > 0)
        ratio = ratios[len(ratios) // 2] if ratios else budget / b
        return wall * ratio
    return max(m["wall_s"] for m in same.values()) if same else None


def _finished(ctx: Context, name: str, budget: int, strategy: str) -> dict:
    """{workload folder name: meta} of the finished runs of one method in OUT_DIR (every shard's)."""
    out = {}
    for path in (ctx.out_dir / "metaschedule").glob(f"*/{name}/meta.json"):
        meta = _meta(path.parent, budget, strategy)
        if meta is not None:
            out[path.parent.parent.name] = meta
    return out


def metaschedule(ctx: Context, entry, budget: int, strategy: str = "evolutionary") -> dict:
    """Tune (or reuse the database of) one workload at one budget; the best valid record is measured."""
    name = ms_name(budget, strategy)
    folder = ms_folder(ctx, entry, name)
    meta_path = folder / "meta.json"
    meta = _meta(folder, budget, strategy)
    if meta is None:
        meta = _tune(ctx, entry, folder, budget, strategy)
        meta_path.write_text(json.dumps(meta, indent=1))
    trace, recorded_us, n_records, n_valid = best_record(folder)
    row = _row(entry, "construction", name, trials=budget, ms_records=n_records, ms_valid=n_valid,
               ms_recorded_us=recorded_us, tune_s=meta["wall_s"], database=str(folder))
    if trace is None:
        row["reason"] = "MetaSchedule found no valid candidate"
        return row
    cands, verify_s = measure(ctx, entry, [trace], f"{ctx.whash(entry.path)}|{name}|best")
    row["candidates"] = cands
    # EngineRunner verified every trial while tuning: the tuning wall time is the time to a verified kernel
    row["time_s"] = meta["wall_s"] if best_latency(cands) is not None else None
    return row


def _tune(ctx: Context, entry, folder: Path, budget: int, strategy: str) -> dict:
    import shutil

    import tvm

    from dragon_dsl.engine.metaschedule import builder_and_runner
    from dragon_dsl.tvm.tuning import tune
    from dragon_dsl.tvm.workload import load_workload

    shutil.rmtree(folder, ignore_errors=True)   # an interrupted run leaves a partial database
    folder.mkdir(parents=True)
    if "tvm.s_tir.tensor_intrin" not in sys.modules:
        # the first tune_tir would pay these imports (tens of seconds) inside its wall time
        t0 = time.perf_counter()
        import tvm.s_tir.tensor_intrin  # noqa: F401
        ctx.import_s += time.perf_counter() - t0
    mod = load_workload(str(entry.path))
    target = tvm.target.Target(ctx.engine.target.spec)
    builder, runner = builder_and_runner(ctx.engine, workload=mod)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(None):
        tune(mod, target, folder, max_trials_global=budget, num_trials_per_iter=min(64, budget),
             builder=builder, runner=runner, strategy=strategy, seed=ctx.seed)
    return {"trials": budget, "strategy": strategy, "wall_s": time.perf_counter() - t0, "seed": ctx.seed}


def best_record(folder: Path) -> tuple:
    """(trace JSON, MetaSchedule's mean latency in us, records, valid records) of the fastest valid
    record in a JSONDatabase folder; read as plain JSON (MetaSchedule marks failures with 1e10 s)."""
    path = folder / "database_tuning_record.json"
    if not path.exists():
        return None, None, 0, 0
    best = (None, None)
    n = valid = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        n += 1
        _, body = json.loads(line)
        trace, run_secs = body[0], body[1]
        secs = [float(s) for s in (run_secs or []) if s is not None]
        if not secs or any(s >= 1e9 for s in secs):
            continue
        valid += 1
        mean_us = 1e6 * sum(secs) / len(secs)
        if best[1] is None or mean_us < best[1]:
            best = (trace, mean_us)
    return best[0], best[1], n, valid


# --- vendor library -----------------------------------------------------------------------------------
def vendor(ctx: Context, entry) -> dict:
    from dragon_dsl.eval import vendor as v

    if not ctx.engine.target.is_gpu:
        return _row(entry, "construction", "vendor", "not_applicable", "PyTorch's vendor libraries run on CUDA only")
    if ctx.engine.device.is_remote:
        return _row(entry, "construction", "vendor", "not_applicable", "PyTorch runs on this machine's GPU only")
    if not v.torch_available():
        return _row(entry, "construction", "vendor", "not_available", "PyTorch is not installed")
    import torch

    if not torch.cuda.is_available():
        return _row(entry, "construction", "vendor", "not_available", "PyTorch has no CUDA device here")
    key = f"{ctx.whash(entry.path)}|vendor|{ctx.repeat}"
    store = ctx.out_dir / "cache" / "vendor.json"
    stored = json.loads(store.read_text()) if store.exists() else {}
    if key not in stored:
        from dragon_dsl.engine.devices import gpu_lock

        ref = ctx.engine.reference(str(entry.path), seeds=ctx.seeds)   # big ones are not in the cache
        with gpu_lock(0):   # the GPU PyTorch uses here; other engines' runs wait
            t0 = time.perf_counter()
            res = v.run(ref, entry.family, entry.params, "cuda", repeat=ctx.repeat)
        stored[key] = {"status": res.status, "op": res.op, "latency_us": res.latency_us, "message": res.message,
                       "max_abs_err": res.max_abs_err, "wall_s": time.perf_counter() - t0,
                       "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}
        stored = update_json(store, {key: stored[key]})
        cached = False
    else:
        cached = True
    rec = stored[key]
    if rec["status"] == "not_applicable":
        return _row(entry, "construction", "vendor", "not_applicable", rec["message"])
    row = _row(entry, "construction", "vendor", op=rec["op"])
    row["candidates"] = [{"status": rec["status"], "latency_us": rec["latency_us"], "cached": cached,
                          "message": rec["message"], "max_abs_err": rec["max_abs_err"], "level": "time"}]
    row["time_s"] = rec["wall_s"] if rec["status"] == "ok" else None
    return row


# --- the model -----------------------------------------------------------------------------------------
def model_suggest():
    """`dragon_model.suggest`, or (None, why not)."""
    try:
        import dragon_model
    except ImportError as exc:
        return None, f"dragon_model cannot be imported: {exc}"
    fn = getattr(dragon_model, "suggest", None)
    if not callable(fn):
        try:
            from dragon_model import api
        except ImportError:
            return None, "dragon_model has no suggest() yet"
        fn = getattr(api, "suggest", None)
    if not callable(fn):
        return None, "dragon_model has no suggest() yet"
    return fn, ""


def script_candidate(text: str):
    """(trace JSON, None) for a script that parses and type-checks, else (None, failure candidate)."""
    from dragon_dsl import DragonError, check_text, to_trace_json
    from dragon_dsl.diagnostics import Severity

    if not isinstance(text, str):
        return None, {"status": "parse_error", "latency_us": None, "cached": False,
                      "message": f"the model returned a {type(text).__name__}, not script text", "level": "syntax"}
    _, diags = check_text(text)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        syntax = any(d.code.startswith("DRG0") for d in errors)
        first = errors[0]
        return None, {"status": "parse_error" if syntax else "type_error", "latency_us": None, "cached": False,
                      "message": f"{first.code} {first.message}"[:300], "level": "syntax" if syntax else "types"}
    try:
        return to_trace_json(text), None
    except DragonError as exc:
        return None, {"status": "type_error", "latency_us": None, "cached": False, "message": str(exc)[:300],
                      "level": "types"}


def model(ctx: Context, entry, n: int, task: str = "construction", script: Optional[str] = None,
          existing_latency_us: Optional[float] = None) -> dict:
    """The model's answer(s): n=1 is its first answer, n=k its best of k."""
    name = "model-first" if n == 1 else f"model-best-of-{n}"
    suggest, why = model_suggest()
    extra = {"k": n}
    if task == "improvement":
        extra["existing_latency_us"] = existing_latency_us
    if suggest is None:
        return _row(entry, task, name, "not_available", why, **extra)
    try:
        texts, gen_s, gen_host = _suggestions(ctx, entry, suggest, n, task, script)
    except FileNotFoundError as exc:   # no trained weights for this target
        return _row(entry, task, name, "not_available", f"no model: {exc}", **extra)
    except OtherVersion as exc:        # --generation-version: answers of another decoder, not written yet
        return _row(entry, task, name, "not_available", str(exc), **extra)
    except ImportError as exc:   # e.g. no xgrammar on a GPU machine that only measures: not the model's failure
        return _row(entry, task, name, "not_available",
                    f"the model cannot generate here ({exc}); generate with --generate-only elsewhere", **extra)
    except Exception as exc:  # the model's own failure on this task: an unsolved task, with the reason
        return _row(entry, task, name, reason=f"suggest() raised {type(exc).__name__}: {str(exc)[:200]}", **extra)
    row = _row(entry, task, name, **extra)
    row["candidates"], row["time_s"] = measure_scripts(
        ctx, entry, texts, f"{ctx.whash(entry.path)}|{name}|{task}|{_digest(texts)}", extra_s=gen_s)
    row["generation_s"] = gen_s
    row["generated_on"] = gen_host
    return row


def generate(ctx: Context, entry, n: int, task: str = "construction", script: Optional[str] = None) -> dict:
    """Only the model's scripts for a task, into OUT_DIR/model (`dragon eval --generate-only`): the
    generation needs no GPU, so a CPU machine can write them and the GPU run measures them."""
    suggest, why = model_suggest()
    if suggest is None:
        raise ValueError(f"the model is not available: {why}")
    path = _suggestions_path(ctx, entry, n, task, script)
    cached = path.exists()
    texts, gen_s, _host = _suggestions(ctx, entry, suggest, n, task, script)
    return {"workload": entry.name, "task": task, "n": n, "scripts": len(texts), "generation_s": gen_s,
            "cached": cached, "file": str(path)}


def measure_scripts(ctx: Context, entry, texts: list, key: str, **kw) -> tuple:
    """(one candidate per script text, in order; the seconds to a verified kernel): a script
    that does not parse, check or encode is a failed candidate; the others are measured."""
    cands: list = [None] * len(texts)
    traces, where = [], []
    for i, text in enumerate(texts):
        trace, failure = script_candidate(text)
        if failure is not None:
            cands[i] = failure
        else:
            traces.append(trace)
            where.append(i)
    measured, seconds = measure(ctx, entry, traces, key, **kw) if traces else ([], None)
    for i, c in zip(where, measured, strict=True):
        cands[i] = c
    return cands, seconds


def _digest(texts) -> str:
    return hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]


def _suggestions_key(ctx: Context, entry, n: int, task: str, script: Optional[str]) -> str:
    key = [ctx.whash(entry.path), task, n, ctx.model_path, script, ctx.target.key, _weights(ctx)]
    version = ctx.generation_version if ctx.generation_version is not None else _generation_version()
    return json.dumps(key + [version] if version is not None else key)


class OtherVersion(LookupError):
    """No stored answers of the decoder version asked for, which this code cannot write."""


def _check_version(ctx: Context) -> None:
    """Raise OtherVersion when `ctx.generation_version` names a decoder other than this code's."""
    current = _generation_version()
    if ctx.generation_version is not None and ctx.generation_version != current:
        raise OtherVersion(f"no answers of decoder version {ctx.generation_version} in {ctx.out_dir / 'model'}; "
                           f"this code writes version {current}")


def _generation_version() -> Optional[int]:
    """dragon_model's GENERATION_VERSION: the same weights decoded differently write other scripts."""
    try:
        from dragon_model.api import GENERATION_VERSION
    except ImportError:
        return None
    return GENERATION_VERSION


def _weights(ctx: Context) -> Optional[str]:
    """The digest of the model's weights (a retrained model never reuses another's scripts)."""
    if "weights" not in ctx.hashes:
        digest = None
        try:
            from dragon_model.api import default_model_path

            folder = Path(ctx.model_path) if ctx.model_path else default_model_path(ctx.target.spec)
        except ImportError:
            folder = None
        files = sorted(Path(folder).glob("*.safetensors")) if folder else []
        if files:
            h = hashlib.sha256()
            for f in files:
                h.update(f.read_bytes())
            digest = h.hexdigest()[:16]
        ctx.hashes["weights"] = digest
    return ctx.hashes["weights"]


def _suggestions_path(ctx: Context, entry, n: int, task: str, script: Optional[str]) -> Path:
    digest = hashlib.sha256(_suggestions_key(ctx, entry, n, task, script).encode()).hexdigest()[:12]
    return ctx.out_dir / "model" / f"{entry.name}-{task}-n{n}-{digest}.json"


def _suggestions(ctx: Context, entry, suggest, n: int, task: str, script: Optional[str]) -> tuple:
    """(scripts, generation seconds, the host that generated them) for a task, generated once and kept
    under OUT_DIR/model (a rerun reuses them, and so does a run on another machine given that folder)."""
    path = _suggestions_path(ctx, entry, n, task, script)
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        return data["scripts"], data["generation_s"], data.get("host")
    _check_version(ctx)
    t0 = time.perf_counter()
    texts = list(suggest(workload=str(entry.path), target=ctx.target.spec, script=script, n=n,
                         model_path=ctx.model_path))
    gen_s = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"scripts": texts, "generation_s": gen_s, "key": json.loads(_suggestions_key(ctx, entry, n, task, script)),
            "host": host()}
    write_json(path, data)   # whole or absent: a killed generation is done again
    return texts, gen_s, data["host"]


def host() -> dict:
    """Where a generation ran (its time is part of the model's time to a verified kernel)."""
    import platform

    gpu = None
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            gpu = torch.cuda.get_device_name()
    return {"node": platform.node(), "cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
            "gpu": gpu}


# --- the improvement task's starting point ---------------------------------------------------------------
def existing(ctx: Context, entry) -> tuple:
    """Measure the existing scripts of a workload: (row, text of the fastest verified one or the first)."""
    row = _row(entry, "improvement", "existing-script", scripts=[p.name for p in entry.scripts])
    texts = [p.read_text(encoding="utf-8") for p in entry.scripts]
    cands, row["time_s"] = measure_scripts(ctx, entry, texts, f"{ctx.whash(entry.path)}|existing|{_digest(texts)}")
    row["candidates"] = cands
    ok = [(c["latency_us"], i) for i, c in enumerate(cands) if c["status"] == "ok" and c["latency_us"] is not None]
    chosen = min(ok)[1] if ok else 0
    row["improves"] = entry.scripts[chosen].name
    return row, texts[chosen], (min(ok)[0] if ok else None)
