"""The methods an evaluation compares. Each returns, per workload and task, one measurement row
(`dragon_dsl.eval.candidates` says what a row holds and how candidates are measured).

Methods: the unscheduled workload and dlight's default GPU rules (engine baselines, here);
MetaSchedule at a trial budget and one random sample of its design space (`metaschedule.py`);
the vendor library through PyTorch (`vendor.py`); the model (`model_answers.py`); and the
improvement task's starting point, the existing scripts of a workload (here).
"""

from __future__ import annotations

import time

from dragon_dsl.eval.candidates import (
    Context,
    candidate_of,
    digest,
    dlight_script,
    keep,
    measure,
    measure_scripts,
    new_row,
    script_candidate,
)
from dragon_dsl.eval.host import host
from dragon_dsl.eval.metaschedule import best_record, expected_tune_s, metaschedule, ms_folder, ms_name
from dragon_dsl.eval.model_answers import (
    OtherVersion,
    expected_generation_s,
    expected_improvement_s,
    generate,
    generation_version,
    model,
    prefetch_first_answers,
    suggestions_path,
)
from dragon_dsl.eval.store import WallTimes, update_json
from dragon_dsl.eval.vendor import method as vendor

__all__ = [
    "Context",
    "OtherVersion",
    "WallTimes",
    "baseline",
    "best_record",
    "existing",
    "expected_generation_s",
    "expected_improvement_s",
    "expected_tune_s",
    "generate",
    "generation_version",
    "host",
    "measure",
    "measure_scripts",
    "metaschedule",
    "model",
    "ms_folder",
    "ms_name",
    "prefetch_baselines",
    "prefetch_first_answers",
    "script_candidate",
    "suggestions_path",
    "update_json",
    "vendor",
]


def prefetch_baselines(ctx: Context, entries: list, kind: str) -> int:
    """Measure the KIND baseline of every entry not measured before in one engine call, so that
    their builds share the build workers instead of running one workload at a time (about 3 s
    each for dlight on an H200 host); `baseline` then takes each one's result from CTX.
    Each one's wall time is stored as its own build and device seconds (verification and timing;
    `baseline` alone times up to its verification). Returns how many were measured."""
    if kind == "dlight" and not ctx.engine.target.is_gpu:
        return 0
    todo = [e for e in entries if f"{ctx.whash(e.path)}|{kind}" not in ctx.walls.data]
    if len(todo) < 2:
        return 0
    results = ctx.engine.baselines(
        [str(e.path) for e in todo], kind=kind, level="time", seeds=ctx.seeds, repeat=ctx.repeat
    )
    for e, r in zip(todo, results):
        keep(ctx, f"{ctx.whash(e.path)}|{kind}", [r])
    return len(todo)


def baseline(ctx: Context, entry, kind: str) -> dict:
    if kind == "dlight" and not ctx.engine.target.is_gpu:
        return new_row(entry, "construction", kind, "not_applicable", "dlight schedules GPU targets only")
    key = f"{ctx.whash(entry.path)}|{kind}"
    prefetched = ctx.prefetched.pop(key, None)
    if prefetched is not None:  # measured with the others (`prefetch_baselines`), its wall time stored
        result, wall = prefetched[0], ctx.walls.data[key]
    else:
        t0 = time.perf_counter()
        verified = ctx.engine.baseline(str(entry.path), kind=kind, level="verify", seeds=ctx.seeds)
        wall = ctx.walls.resolve(key, time.perf_counter() - t0, not verified.cached)
        result = verified
        if verified.ok:
            result = ctx.engine.baseline(str(entry.path), kind=kind, level="time", seeds=ctx.seeds, repeat=ctx.repeat)
    row = new_row(entry, "construction", kind)
    row["candidates"] = [candidate_of(result)]
    if kind == "dlight" and (script := dlight_script(ctx, entry)) is not None:
        row["candidates"][0]["script"] = script  # for the answers equal to it (metrics.same_script)
    row["time_s"] = wall if result.ok else None
    return row


def existing(ctx: Context, entry) -> tuple:
    """Measure the existing scripts of a workload: (row, text of the fastest verified one or the first)."""
    row = new_row(entry, "improvement", "existing-script", scripts=[p.name for p in entry.scripts])
    texts = [p.read_text(encoding="utf-8") for p in entry.scripts]
    cands, row["time_s"] = measure_scripts(ctx, entry, texts, f"{ctx.whash(entry.path)}|existing|{digest(texts)}")
    row["candidates"] = cands
    ok = [(c["latency_us"], i) for i, c in enumerate(cands) if c["status"] == "ok" and c["latency_us"] is not None]
    chosen = min(ok)[1] if ok else 0
    row["improves"] = entry.scripts[chosen].name
    return row, texts[chosen], (min(ok)[0] if ok else None)
