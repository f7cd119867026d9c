"""The MetaSchedule method: `tune_tir` at a trial budget (or one random sample of its design space)
through EngineBuilder/EngineRunner, which verify every candidate; the best valid record is
measured like every other method's candidate.

Folder layout under the evaluation's OUT_DIR (a rerun reuses a finished database):

    OUT_DIR/metaschedule/<workload>-<hash8>/<method>/   one JSONDatabase (database_workload.json,
                                                        database_tuning_record.json) and
    OUT_DIR/metaschedule/<workload>-<hash8>/<method>/meta.json   {"trials", "strategy", "wall_s",
                                                        "seed"}: written once the run finished
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

from dragon_dsl.eval.candidates import Context, measure, new_row
from dragon_dsl.eval.metrics import best_latency


def ms_name(budget: int, strategy: str = "evolutionary") -> str:
    return "ms-random" if strategy == "replay-trace" else f"metaschedule-{budget}"


def ms_workload_folder(ctx: Context, entry) -> Path:
    """OUT_DIR/metaschedule/<workload>-<hash>: one workload's MetaSchedule runs, a folder per method."""
    return ctx.out_dir / "metaschedule" / f"{entry.name}-{ctx.whash(entry.path)[:8]}"


def ms_folder(ctx: Context, entry, name: str) -> Path:
    """OUT_DIR/metaschedule/<workload>-<hash>/<method>: one MetaSchedule database and its meta.json."""
    return ms_workload_folder(ctx, entry) / name


def read_meta(folder: Path, budget: int, strategy: str) -> dict | None:
    """The meta.json of a finished tuning run of that budget and strategy, else None."""
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    return meta if meta.get("trials") == budget and meta.get("strategy") == strategy else None


def expected_tune_s(ctx: Context, entry, budget: int, strategy: str = "evolutionary") -> float | None:
    """Seconds this workload's tuning at `budget` is expected to take: 0 when its database is complete;
    else its own run at a smaller budget scaled by the ratio the workloads with both runs show (by the
    ratio of trials when none has both); else the slowest finished run of the same method; None when
    nothing is known yet."""
    name = ms_name(budget, strategy)
    if read_meta(ms_folder(ctx, entry, name), budget, strategy) is not None:
        return 0.0
    if strategy != "evolutionary":
        walls = [m["wall_s"] for m in _finished(ctx, name, budget, strategy).values()]
        return max(walls) if walls else None
    own = ms_workload_folder(ctx, entry)
    smaller = (
        sorted(
            (m["trials"], m["wall_s"])
            for m in (read_meta(own / ms_name(b), b, strategy) for b in range(1, budget))
            if m is not None
        )
        if own.is_dir()
        else []
    )
    same = _finished(ctx, name, budget, strategy)
    if smaller:
        b, wall = smaller[-1]
        lower = _finished(ctx, ms_name(b), b, strategy)
        ratios = sorted(
            same[w]["wall_s"] / lower[w]["wall_s"] for w in same.keys() & lower.keys() if lower[w]["wall_s"] > 0
        )
        ratio = ratios[len(ratios) // 2] if ratios else budget / b
        return wall * ratio
    return max(m["wall_s"] for m in same.values()) if same else None


def _finished(ctx: Context, name: str, budget: int, strategy: str) -> dict:
    """{workload folder name: meta} of the finished runs of one method in OUT_DIR (every shard's)."""
    out = {}
    for path in (ctx.out_dir / "metaschedule").glob(f"*/{name}/meta.json"):
        meta = read_meta(path.parent, budget, strategy)
        if meta is not None:
            out[path.parent.parent.name] = meta
    return out


def metaschedule(ctx: Context, entry, budget: int, strategy: str = "evolutionary") -> dict:
    """Tune (or reuse the database of) one workload at one budget; the best valid record is measured."""
    name = ms_name(budget, strategy)
    folder = ms_folder(ctx, entry, name)
    meta_path = folder / "meta.json"
    meta = read_meta(folder, budget, strategy)
    if meta is None:
        meta = _tune(ctx, entry, folder, budget, strategy)
        meta_path.write_text(json.dumps(meta, indent=1))
    trace, recorded_us, n_records, n_valid = best_record(folder)
    row = new_row(
        entry,
        "construction",
        name,
        trials=budget,
        ms_records=n_records,
        ms_valid=n_valid,
        ms_recorded_us=recorded_us,
        tune_s=meta["wall_s"],
        database=str(folder),
    )
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

    from dragon_dsl.engine import builder_and_runner
    from dragon_dsl.tvm.intrinsics import register_tensor_intrinsics
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.tuning import tune
    from dragon_dsl.tvm.workload import load_workload

    shutil.rmtree(folder, ignore_errors=True)  # an interrupted run leaves a partial database
    folder.mkdir(parents=True)
    if "tvm.s_tir.tensor_intrin" not in sys.modules:
        # the first tune_tir would pay these imports (tens of seconds) inside its wall time
        t0 = time.perf_counter()
        register_tensor_intrinsics()
        ctx.import_s += time.perf_counter() - t0
    mod = load_workload(str(entry.path))
    target = tvm_target(ctx.engine.target.spec)
    builder, runner = builder_and_runner(ctx.engine, workload=mod)
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(None):
        tune(
            mod,
            target,
            folder,
            max_trials_global=budget,
            num_trials_per_iter=min(64, budget),
            builder=builder,
            runner=runner,
            strategy=strategy,
            seed=ctx.seed,
        )
    return {"trials": budget, "strategy": strategy, "wall_s": time.perf_counter() - t0, "seed": ctx.seed}


def best_record(folder: Path) -> tuple:
    """(trace JSON, MetaSchedule's mean latency in us, records, valid records) of the fastest valid
    record in a JSONDatabase folder (`dragon_dsl.tvm.database.record_latencies`: MetaSchedule marks
    failures with 1e10 s); the first of equally fast ones."""
    from dragon_dsl.tvm.database import record_latencies

    path = folder / "database_tuning_record.json"
    if not path.exists():
        return None, None, 0, 0
    runs = record_latencies(path)
    valid = [(us, i) for i, (_trace, us) in enumerate(runs) if us is not None]
    if not valid:
        return None, None, len(runs), 0
    us, i = min(valid)
    return runs[i][0], us, len(runs), len(valid)
