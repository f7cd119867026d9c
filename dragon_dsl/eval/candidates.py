"""How every method's candidates are measured: the evaluation's context, its rows, and the two
engine passes each candidate goes through.

    {"workload", "task": "construction"|"improvement", "method",
     "status": "measured"|"not_available"|"not_applicable", "reason",
     "candidates": [{"status", "latency_us", "cached", "message", ...}],   # in the method's order
     "time_s": wall seconds from start to the method's verified answer (None: none verified),
     ...method-specific fields}

Every candidate goes through the measurement engine twice: `verify` (timed: this is the
time to a verified kernel) and then `time` for the verified ones, so latencies of all
methods come from the same timer. A script text is first taken up the check-level ladder
(`dragon_dsl.levels`): one that does not parse or type-check is a failed candidate.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from dragon_dsl.eval.metrics import best_latency
from dragon_dsl.eval.store import WallTimes


@dataclass
class Context:
    engine: object
    out_dir: Path
    walls: WallTimes
    seeds: int = 3
    repeat: int = 5
    seed: int = 20260101
    k: int = 8
    model_path: str | None = None
    import_s: float = 0.0  # MetaSchedule's imports, paid once, reported as start-up
    hashes: dict = field(default_factory=dict)  # workload path -> structural hash
    target: object = None  # engine/targets.py's Target (the engine's, when there is one)
    generation_version: int | None = None  # measure the answers of this decoder version (None: the model's)
    prefetched: dict = field(default_factory=dict)  # measurement key -> its Results, measured in a batch (`keep`)

    def __post_init__(self):
        if self.target is None and self.engine is not None:
            self.target = self.engine.target

    def whash(self, path) -> str:
        key = str(path)
        if key not in self.hashes:
            from dragon_dsl.engine import workload_hash

            self.hashes[key] = workload_hash(key)
        return self.hashes[key]


def new_row(entry, task: str, method: str, status: str = "measured", reason: str = "", **extra) -> dict:
    return {
        "workload": entry.name,
        "task": task,
        "method": method,
        "status": status,
        "reason": reason,
        "candidates": [],
        "time_s": None,
        **extra,
    }


def candidate_of(result) -> dict:
    return {
        "status": result.status.value,
        "latency_us": result.latency_us if result.ok else None,
        "cached": result.cached,
        "message": result.message[:300],
        "max_abs_err": result.max_abs_err,
        "level": result.level,
    }


def measure(ctx: Context, entry, traces: list, key: str, extra_s: float = 0.0) -> tuple:
    """(candidate dicts, time_s) for traces on a workload: verify all, time the verified ones.
    time_s = extra_s + verify wall time, or None when nothing verified. Traces `prefetch` measured
    under KEY are not measured again."""
    pre = ctx.prefetched.pop(key, None)
    if pre is not None and len(pre) == len(traces):
        final, wall = pre, ctx.walls.data[key]
    else:
        t0 = time.perf_counter()
        verified = ctx.engine.measure(str(entry.path), traces, level="verify", seeds=ctx.seeds)
        wall = time.perf_counter() - t0
        fresh = any(not r.cached for r in verified)
        ok = [i for i, r in enumerate(verified) if r.ok]
        timed = (
            ctx.engine.measure(
                str(entry.path), [traces[i] for i in ok], level="time", seeds=ctx.seeds, repeat=ctx.repeat
            )
            if ok
            else []
        )
        final = list(verified)
        for i, r in zip(ok, timed, strict=True):
            final[i] = r
        wall = ctx.walls.resolve(key, wall, fresh)
    cands = [candidate_of(r) for r in final]
    return cands, (extra_s + wall if best_latency(cands) is not None else None)


def prefetch(ctx: Context, jobs: list) -> int:
    """Measure the traces of several workloads in one engine call, JOBS being (entry, traces, key)
    as `measure` takes them, so that their builds share the build workers instead of running one
    workload at a time; `measure` then takes each job's results from CTX. A job's wall time is its
    traces' own build and device seconds (verification and timing). Jobs measured before (their
    wall time stored) are left to `measure`, which finds them in the caches. Returns how many jobs
    were measured."""
    from dragon_dsl.engine import Task

    jobs = [(e, traces, key) for e, traces, key in jobs if traces and key not in ctx.walls.data]
    if len(jobs) < 2:
        return 0
    tasks = [
        Task(str(e.path), t, level="time", seeds=ctx.seeds, repeat=ctx.repeat) for e, traces, _ in jobs for t in traces
    ]
    results = iter(ctx.engine.run(tasks))
    for _, traces, key in jobs:
        keep(ctx, key, [next(results) for _ in traces])
    return len(jobs)


def keep(ctx: Context, key: str, results: list) -> None:
    """Results measured in a batch for the measurement KEY: its wall time, their own build and
    device seconds, is stored, and the row that measures KEY takes them from CTX."""
    seconds = sum((r.build_s or 0.0) + (r.run_s or 0.0) for r in results)
    ctx.walls.resolve(key, seconds, any(not r.cached for r in results))
    ctx.prefetched[key] = results


def script_candidate(text: str):
    """(trace JSON, None) for a script that parses and type-checks, else (None, failure candidate).
    The check is the check-level ladder's (`dragon_dsl.levels`): the level that found the first
    error names the failure (syntax: "parse_error", types: "type_error")."""
    from dragon_dsl import DragonError, to_trace_json
    from dragon_dsl.language.diagnostics import Severity
    from dragon_dsl.levels import check_text_at_level

    if not isinstance(text, str):
        return None, {
            "status": "parse_error",
            "latency_us": None,
            "cached": False,
            "message": f"the model returned a {type(text).__name__}, not script text",
            "level": "syntax",
        }
    report = check_text_at_level(text, level="types")
    if report.failed is not None:
        first = next(d for d in report.diagnostics if d.severity is Severity.ERROR)
        return None, {
            "status": "parse_error" if report.failed == "syntax" else "type_error",
            "latency_us": None,
            "cached": False,
            "message": f"{first.code} {first.message}"[:300],
            "level": report.failed,
        }
    try:
        return to_trace_json(text), None
    except DragonError as exc:
        return None, {
            "status": "type_error",
            "latency_us": None,
            "cached": False,
            "message": str(exc)[:300],
            "level": "types",
        }


def measure_scripts(ctx: Context, entry, texts: list, key: str, **kw) -> tuple:
    """(one candidate per script text, in order, each with its "script"; the seconds to a verified
    kernel): a script that does not parse, check or encode is a failed candidate; the others are
    measured."""
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
    # each candidate keeps its script: the report's answers can be checked again from results.json
    cands = [dict(c, script=text) for c, text in zip(cands, texts, strict=True)]
    return cands, seconds


def dlight_script(ctx: Context, entry) -> str | None:
    """dlight's schedule of the workload as a script (`dragon_dsl.tvm.dlight`), recorded in dlight's
    row so that the report can tell the answers that copy it (`metrics.same_script`); None where no
    rule applies or the script cannot be written (never the row's failure: its kernel is measured
    by the engine's own dlight baseline)."""
    try:
        spec = ctx.target.spec
        from dragon_dsl import from_trace_json
        from dragon_dsl.tvm.dlight import dlight_trace
        from dragon_dsl.tvm.workload import load_workload

        found = dlight_trace(load_workload(Path(entry.path).read_text(encoding="utf-8")), spec)
        return None if found is None else from_trace_json(found[1], workload=Path(entry.path).name, target=spec)
    except Exception:  # a record beside the measurement, not part of it
        return None


def digest(texts) -> str:
    return hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]
