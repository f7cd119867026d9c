"""GPU smoke run of the measurement engine (for an H100/H200 machine; prints figures).

    python benchmarks/gpu_engine_smoke.py --part throughput --json out.json
    python benchmarks/gpu_engine_smoke.py --part tune --workloads matmul_1024 --json out.json
    python benchmarks/gpu_engine_smoke.py --part tune --workloads c2d_1,gmm_2,nrm_2 --json out.json

Parts (select with --part; each fits a 10-minute command when split as above):
  throughput  CUDA candidates built + verified + timed per minute on the warm pool, from
              the "nvidia/nvidia-h100" traces in tests/data/traces (the H200 is sm_90 too);
              the goal is at least 300 per minute. Start-up and the verifier's references
              (once per workload; the unscheduled conv3d c3d_3 takes minutes on the CPU)
              are reported apart.
  tune        MetaSchedule tune_tir on each workload with the same trial count, once with
              the stock LocalBuilder(timeout_sec=180) + LocalRunner and once with
              EngineBuilder + EngineRunner (which also verify every candidate); wall time,
              its ratio, and the best latency of each (as MetaSchedule recorded it, and
              re-measured by the engine the same way for both).
Everything is printed as Markdown tables; the JSON file named by --json collects the
figures of every part run so far (it is read and updated, so separate commands add up).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_TAG = "nvidia/nvidia-h100"
TAG = DEFAULT_TAG  # --target replaces it
TUNE_WORKLOADS = {  # name -> (te_workload key, config index) or a matmul size
    "matmul_1024": ("matmul", 1024),
    "c2d_1": ("C2D", 1),
    "gmm_2": ("GMM", 2),
    "nrm_2": ("NRM", 2),
}


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


# --- throughput ---------------------------------------------------------------------------------
def throughput(rounds: int, sources: list, skip: set) -> dict:
    from dragon_dsl.engine import Engine, Task

    by_workload: dict = {}
    for source in sources:
        with open(ROOT / "tests" / "data" / "traces" / f"{source}.jsonl", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                if rec["target"] == TAG and rec["workload"] not in skip:
                    path = str(ROOT / "tests" / "data" / "workloads" / f"{rec['workload']}.tvmscript")
                    by_workload.setdefault(path, []).append(rec["trace"])
    n = sum(len(v) for v in by_workload.values())
    t0 = time.perf_counter()
    engine = Engine(TAG, cache=False, timeout_s=60.0)
    first = next(iter(by_workload))
    engine.measure(first, by_workload[first][:1], level="time")  # workers up, CUDA context made
    startup = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine.prepare(list(by_workload))  # references are per workload, once: kept out of the rate
    references = time.perf_counter() - t0
    log(
        f"throughput: {n} candidates x {rounds} rounds, start-up {startup:.1f} s, references of "
        f"{len(by_workload)} workloads {references:.1f} s, {engine.workers} build workers"
    )
    statuses, per_round = Counter(), []
    latencies = {}
    # one batch per round, across workloads, as a search loop would send it: builds of later
    # workloads overlap the GPU runs of earlier ones
    tasks = [
        Task(path, trace, level="time", use_cache=False) for path, traces in by_workload.items() for trace in traces
    ]
    for r in range(rounds):
        t1 = time.perf_counter()
        results = engine.run(tasks)
        per_round.append(time.perf_counter() - t1)
        statuses.update(x.status.value for x in results)
        by_name: dict = {}
        for task, result in zip(tasks, results, strict=True):
            by_name.setdefault(Path(task.workload).stem, []).append(result)
            if result.ok:
                latencies.setdefault(Path(task.workload).stem, []).append(result.latency_us)
        for name, rs in by_name.items():
            log(
                f"    {name}: {dict(Counter(x.status.value for x in rs))} "
                + "; ".join(sorted({x.message[:120] for x in rs if not x.ok}))[:300]
            )
        log(f"  round {r}: {n} in {per_round[-1]:.1f} s = {60 * n / per_round[-1]:.0f}/min")
    stats = engine.stats()
    engine.close()
    seconds = sum(per_round)
    return {
        "candidates": n * rounds,
        "rounds": rounds,
        "seconds": seconds,
        "per_minute": 60 * n * rounds / seconds,
        "ok_per_minute": 60 * statuses.get("ok", 0) / seconds,
        "startup_s": startup,
        "references_s": references,
        "skipped_workloads": sorted(skip),
        "statuses": dict(statuses),
        "engine_stats": stats,
        "build_workers": os.cpu_count(),
        "best_latency_us": {k: min(v) for k, v in sorted(latencies.items())},
    }


# --- tuning -------------------------------------------------------------------------------------
def make_workload(name: str):
    import tvm
    from tvm import te
    from tvm.s_tir.meta_schedule.testing import te_workload

    from dragon_dsl.tvm.workload import load_workload

    key, arg = TUNE_WORKLOADS[name]
    if key == "matmul":
        func = te.create_prim_func(list(te_workload.matmul(arg, arg, arg)))
    else:
        func = te_workload.create_te_workload(key, arg)
    text = tvm.IRModule({"main": func}).script()
    return load_workload(load_workload(text).script())  # one print/parse cycle: stable names


def tune_one(name: str, mode: str, trials: int, verify: bool, keep_dir: str | None = None, engine=None) -> dict:
    """Tune one workload; `keep_dir` keeps MetaSchedule's database there (default: a temporary folder).

    In engine mode, `engine` is a warm Engine shared by several workloads (as the corpus search
    uses it); its start-up is then the caller's to report. Without it, a fresh engine is started
    and its start-up counts in this workload's wall time."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from dragon_dsl.engine import Engine
    from dragon_dsl.engine.metaschedule import builder_and_runner
    from dragon_dsl.tvm.trace import trace_json

    mod = make_workload(name)
    target = tvm.target.Target(TAG)
    with contextlib.nullcontext(keep_dir) if keep_dir else tempfile.TemporaryDirectory() as work_dir:
        shared = engine
        t0 = time.perf_counter()  # a fresh engine's start-up counts in its wall time
        if mode == "stock":
            engine = None
            builder, runner = ms.builder.LocalBuilder(timeout_sec=180), ms.runner.LocalRunner()
        else:
            engine = shared or Engine(TAG, cache=False, timeout_s=180.0)
            builder, runner = builder_and_runner(engine, workload=mod if verify else None)
        database = ms.tune_tir(
            mod,
            target,
            work_dir,
            max_trials_global=trials,
            num_trials_per_iter=64,
            builder=builder,
            runner=runner,
            seed=20260101,
        )
        wall = time.perf_counter() - t0
        records = database.get_all_tuning_records()
        valid = [r for r in records if r.run_secs and all(float(s) < 1e9 for s in r.run_secs)]
        best = min(valid, key=lambda r: sum(float(s) for s in r.run_secs) / len(r.run_secs)) if valid else None
        out = {"wall_s": wall, "records": len(records), "valid": len(valid), "warm_engine": shared is not None}
        if best is not None:
            # the same measurement for both: the engine re-times each mode's best schedule (after
            # tuning, so that the stock run never shares the machine with the engine's workers)
            engine = engine or Engine(TAG, cache=False, timeout_s=180.0)
            out["ms_best_us"] = 1e6 * sum(float(s) for s in best.run_secs) / len(best.run_secs)
            sch = tvm.s_tir.Schedule(mod)
            best.trace.apply_to_schedule(sch, remove_postproc=False)
            (again,) = engine.measure(mod, [trace_json(sch)], level="time", repeat=10)
            out["engine_best_us"] = again.latency_us
            out["engine_best_status"] = again.status.value
    if engine is not None and engine is not shared:
        engine.close()
    log(f"tune {name} {mode}: {json.dumps(out)}")
    return out


# --- output -------------------------------------------------------------------------------------
def markdown(report: dict) -> str:
    lines = []
    if "throughput" in report:
        t = report["throughput"]
        lines += [
            "## Throughput (warm pool, build + verify + time)",
            "",
            "| candidates | seconds | per minute | ok per minute | start-up s | references s | statuses | engine |",
            "|---|---|---|---|---|---|---|---|",
            f"| {t['candidates']} | {t['seconds']:.1f} | {t['per_minute']:.0f} | {t['ok_per_minute']:.0f} | "
            f"{t['startup_s']:.1f} | {t['references_s']:.1f} | {json.dumps(t['statuses'])} | "
            f"{json.dumps(t['engine_stats'])} |",
            "",
        ]
    if report.get("tune"):
        lines += [
            "## tune_tir: stock LocalBuilder/LocalRunner vs EngineBuilder/EngineRunner",
            "",
            "| workload | trials | stock wall s | engine wall s | wall ratio | stock best us (MS / engine) | "
            "engine best us (MS / engine) |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, modes in report["tune"].items():
            s, e = modes.get("stock", {}), modes.get("engine", {})
            ratio = f"{s['wall_s'] / e['wall_s']:.2f}" if s.get("wall_s") and e.get("wall_s") else ""
            lines.append(
                f"| {name} | {modes.get('trials', '')} | {_f(s.get('wall_s'))} | {_f(e.get('wall_s'))} | "
                f"{ratio} | {_f(s.get('ms_best_us'))} / {_f(s.get('engine_best_us'))} | "
                f"{_f(e.get('ms_best_us'))} / {_f(e.get('engine_best_us'))} |"
            )
        both = [
            m for m in report["tune"].values() if m.get("stock", {}).get("wall_s") and m.get("engine", {}).get("wall_s")
        ]
        startup = report.get("engine_startup_s")
        if both:
            stock = sum(m["stock"]["wall_s"] for m in both)
            eng = sum(m["engine"]["wall_s"] for m in both)
            warm = all(m["engine"].get("warm_engine") for m in both)
            total = eng + (startup or 0.0) if warm else eng
            lines += [
                "",
                f"Total over {len(both)} workloads: stock {stock:.1f} s, engine {total:.1f} s"
                + (f" ({eng:.1f} s tuning + {startup:.1f} s engine start-up, paid once)" if warm and startup else "")
                + f": {stock / total:.2f}x less wall time.",
            ]
    return "\n".join(lines)


def _f(x) -> str:
    return "" if x is None else f"{x:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["throughput", "tune", "all"], required=True)
    ap.add_argument("--json", required=True, help="JSON file to write (merged with what it already holds)")
    ap.add_argument("--rounds", type=int, default=2, help="throughput: passes over the traces")
    ap.add_argument("--sources", default="sampled,design_spaces", help="throughput: trace files to use")
    ap.add_argument("--skip", default="", help="throughput: workloads to leave out (comma-separated)")
    ap.add_argument("--workloads", default=",".join(TUNE_WORKLOADS), help="tune: comma-separated names")
    ap.add_argument("--mode", choices=["stock", "engine", "both"], default="both")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--no-verify", action="store_true", help="tune: EngineRunner times without verifying")
    ap.add_argument("--target", default=DEFAULT_TAG, help="a tag, or a target dict as JSON (a CPU dry run)")
    args = ap.parse_args()
    global TAG
    TAG = json.loads(args.target) if args.target.startswith("{") else args.target

    path = Path(args.json)
    report = json.loads(path.read_text()) if path.exists() else {}
    report["machine"] = {"python": platform.python_version(), "cpus": os.cpu_count(), "target": TAG}
    try:
        from dragon_dsl.engine.targets import local_gpus

        report["machine"]["gpus"] = list(local_gpus())
    except Exception as exc:  # reporting only
        report["machine"]["gpus"] = f"unknown: {exc}"
    if args.part in ("throughput", "all"):
        skip = set(filter(None, args.skip.split(",")))
        report["throughput"] = throughput(args.rounds, args.sources.split(","), skip)
        path.write_text(json.dumps(report, indent=2))
    if args.part in ("tune", "all"):
        report.setdefault("tune", {})
        modes = ["stock", "engine"] if args.mode == "both" else [args.mode]
        for name in args.workloads.split(","):
            entry = report["tune"].setdefault(name, {})
            entry["trials"] = args.trials
            for mode in modes:
                entry[mode] = tune_one(name, mode, args.trials, verify=not args.no_verify)
                path.write_text(json.dumps(report, indent=2))
    print(markdown(report))
    path.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
