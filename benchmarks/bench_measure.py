"""Candidates per minute on the labelling path: today's engine call against `dragon measure`'s path,
on one batch, in one run, with identical verdicts required.

    python benchmarks/bench_measure.py --target cuda --out $OUT            # the GPU host (no network needed)
    python benchmarks/bench_measure.py --target llvm --candidates 48 --workloads 16 --out /tmp/bm
    ... --rpc                                                             # also through a TVM RPC tracker

The batch: workloads of every family of the target's corpus (data/corpus/<cuda|llvm>, all
splits; --workloads of them, spread over the families), each with its corpus traces and variants
of them whose sampling decisions are changed (a SamplePerfectTile's factors permuted, a
SampleCategorical's choice moved: what MetaSchedule's evolutionary search does), --candidates in
all. It is written to OUT/batch.jsonl (the workloads to --workload-dir, by default a temporary
folder); OUT gets batch.jsonl, results-measure.jsonl, results-rpc.jsonl, bench_measure.json and
the RPC processes' logs (rpc-tracker.log, rpc-server-N.log).

Modes, one after the other in this order (the baseline after the measure modes with
--baseline-last), each on a fresh engine (results cache off) whose workers are started
and warm before the clock starts:
  * baseline: `Engine(target)` and one `engine.run` over the whole batch (the engine path as it was:
    no source dedupe, one device worker per GPU, the CUDA source compiled as TVM writes it,
    `cuda_preamble="full"`, kernels timed with TVM's time_evaluator, `gpu_timer="evaluator"`);
  * measure:  `dragon measure`'s path (`batchfile.measure_batch` with `batchfile.engine_options`:
    identical programs measured once, two device workers per local GPU, the CUDA source trimmed
    of the type traits it does not use, rows appended as decided; CUDA kernels timed behind a
    blocking kernel, `--gpu-timer evaluator` for TVM's time_evaluator);
  * measure-longest-first (--also-build-order longest-first): the same, with builds handed out
    longest-first (pool.JobQueue);
  * measure-again (--measure-again): the measure mode once more, after the others (on a GPU host a
    mode that ran later compiled the same kernels in a third of the time: this separates the order
    of the modes from what they do);
  * rpc (--rpc): the measure path through a TVM RPC tracker and one RPC server per GPU (one for the
    CPU) started here on loopback (`python -m tvm.exec.rpc_tracker` / `dragon rpc-server`; GPU servers with
    `--no-fork` and nvcc as TVM's compiler of the CUDA source the libraries carry, docs/MEASURE.md).
Printed: candidates per minute (all, and verified-and-timed ones), the phase profile (seconds
summed over workers: parse (a build worker loading a workload), replay, checks, codegen, compile,
upload, wait, verify, time; idle device seconds; build_span, from the start to the last build's
reply; main, the seconds the engine's own process spent on the replies), the build workers' busy
share of build_span, the duplicate sources found, and the verdict comparison (status and checked input sets
of every candidate must match; latencies of candidates both modes timed: median ratio and the
share within 5%). OUT/bench_measure.json holds all of it. Exit 1 when verdicts differ; exit 3 when
--rpc could not start its tracker or servers (what they said is printed and kept as `rpc_error`; the
local figures are still written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from measure_batch import make_batch  # noqa: E402  (bench_reference_program.py uses it from here)
from measure_figures import compare, figures, print_report  # noqa: E402
from measure_rpc import RpcUnavailable, log_tail, start_rpc, stop_rpc  # noqa: E402


# --- the modes ----------------------------------------------------------------------------------
def warm(engine, workload: str, level: str) -> None:
    """Start every worker (builders and device workers) and wait until each has imported TVM,
    before the clock starts."""
    from dragon_dsl.engine.pool import Dispatcher

    pools = [engine._builders] + ([engine._device_pool()] if level != "build" else [])
    dispatcher = Dispatcher(pools)
    while not all(w.ready for pool in pools for w in pool.workers):
        dispatcher._wait_once()


def run_baseline(target, batch: Path, level: str, workers, timing: dict) -> dict:
    from dragon_dsl.engine import Engine, Task
    from dragon_dsl.engine.batchfile import read_batch

    cands = [c for c in read_batch(batch) if not c.problem]
    with Engine(target, workers=workers, cache=False, cuda_preamble="full", gpu_timer="evaluator") as engine:
        warm(engine, cands[0].workload, level)
        engine.profile(reset=True)
        t0 = time.perf_counter()
        results = engine.run([Task(c.workload, c.trace, level=level, **timing) for c in cands])
        wall = time.perf_counter() - t0
        profile = engine.profile()
        stats = engine.stats()
        workers = engine.workers
    rows = {
        c.id: {"status": r.status.value, "n_checked": r.n_checked, "latency_us": r.latency_us, "timer": r.timer}
        for c, r in zip(cands, results)
    }
    return {"wall_s": wall, "rows": rows, "profile": profile, "stats": stats, "workers": workers}


class _TimeUp(Exception):
    """A mode's time limit passed: its rows so far are compared, the rest is left out."""


def run_measure(
    target,
    batch: Path,
    out: Path,
    level: str,
    workers,
    timing: dict,
    device: str = "local",
    build_group: int | None = None,
    seconds: float = 0.0,
    build_order: str | None = None,
    gpu_timer: str = "blocked",
) -> dict:
    """One mode through `measure_batch`; with SECONDS, it stops after that long (rows written so
    far are kept: `complete` says whether every candidate has one)."""
    from dragon_dsl.engine import Engine
    from dragon_dsl.engine.batchfile import engine_options, measure_batch, read_batch

    out.unlink(missing_ok=True)
    first = next(c for c in read_batch(batch) if not c.problem)
    options = engine_options(target, device)
    if build_group is not None:
        options["build_group"] = build_group
    if build_order is not None:
        options["build_order"] = build_order
    options["gpu_timer"] = gpu_timer
    deadline = None

    def on_row(_row):
        if deadline is not None and time.monotonic() > deadline:
            raise _TimeUp()

    complete = True
    with Engine(target, device=device, workers=workers, cache=False, **options) as engine:
        warm(engine, first.workload, level)
        engine.timeline = []
        t0 = time.perf_counter()
        deadline = time.monotonic() + seconds if seconds else None  # the clock starts once warm, as wall's
        try:
            wall = measure_batch(batch, out, engine, level, on_row=on_row, **timing).wall_s
        except _TimeUp:
            complete = False
            wall = time.perf_counter() - t0
        profile, stats, workers = engine.profile(), engine.stats(), engine.workers
        timeline = build_timeline(engine.timeline, t0, workers)
    rows = {}
    for line in out.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        rows[r["id"]] = {
            "status": r["status"],
            "n_checked": r.get("n_checked"),
            "latency_us": r.get("latency_us"),
            "duplicate_of": r.get("duplicate_of") or "",
            "message": (r.get("message") or "")[:300],
            "timer": r.get("timer") or "",
        }
    duplicates = sum(1 for r in rows.values() if r["duplicate_of"])
    return {
        "wall_s": wall,
        "rows": rows,
        "profile": profile,
        "stats": stats,
        "duplicates": duplicates,
        "complete": complete,
        "workers": workers,
        "timeline": timeline,
    }


def build_timeline(jobs: list, t0: float, workers: int) -> dict:
    """Where the build workers' time went (JOBS: the engine's timeline, seconds from T0): worker
    seconds busy before the last build was sent and after it (the tail), the busy workers in each
    second (worker-seconds), the longest build jobs (a reference for the verifier is one too), and
    each workload's build seconds and jobs, the largest first."""
    builds = sorted(
        (sent - t0, done - t0, wkey, status) for pool, _, sent, done, wkey, status in jobs if pool == "build"
    )
    if not builds:
        return {}
    last_sent = max(b[0] for b in builds)
    end = max(b[1] for b in builds)
    busy_before = sum(min(done, last_sent) - sent for sent, done, _, _ in builds if sent < last_sent)
    busy_after = sum(done - max(sent, last_sent) for sent, done, _, _ in builds if done > last_sent)
    per_second = [
        round(sum(max(0.0, min(done, s + 1) - max(sent, s)) for sent, done, _, _ in builds), 1)
        for s in range(int(end) + 1)
    ]
    longest = sorted(builds, key=lambda b: b[0] - b[1])[:10]
    by_workload: dict = {}  # build seconds and jobs per workload: which workloads' builds differ between modes
    for sent, done, wkey, _ in builds:
        entry = by_workload.setdefault(wkey or "", [0.0, 0])
        entry[0] += done - sent
        entry[1] += 1
    return {
        "jobs": len(builds),
        "last_sent_s": round(last_sent, 2),
        "last_reply_s": round(end, 2),
        "build_seconds_by_workload": {
            k: [round(v[0], 2), v[1]] for k, v in sorted(by_workload.items(), key=lambda kv: -kv[1][0])
        },
        "busy_until_last_sent": round(busy_before / (workers * last_sent), 3) if last_sent else None,
        "busy_in_tail": round(busy_after / (workers * (end - last_sent)), 3) if end > last_sent else None,
        "busy_workers_per_second": per_second,
        "longest": [
            {"seconds": round(done - sent, 2), "sent_s": round(sent, 2), "workload": wkey, "status": status}
            for sent, done, wkey, status in longest
        ],
    }


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--target", default="llvm", help="llvm, cuda, or a target tag / JSON object (default llvm)")
    p.add_argument("--candidates", type=int, default=1000)
    p.add_argument("--workloads", type=int, default=32, help="spread over every family of the corpus (default 32)")
    p.add_argument("--level", choices=("verify", "time"), default="time")
    p.add_argument("--workers", type=int, help="build workers (default: one per core)")
    p.add_argument("--out", default="bench_measure_out", help="folder for the batch, results and bench_measure.json")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workload-dir", help="where the batch's .tvmscript files go (default: a temporary folder)")
    p.add_argument("--rpc", action="store_true", help="also measure through a TVM RPC tracker on loopback")
    p.add_argument(
        "--rpc-seconds",
        type=float,
        default=0.0,
        help="stop the RPC mode after this long and compare the candidates it measured (default: no limit)",
    )
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument(
        "--baseline-last",
        action="store_true",
        help="run the baseline after the measure modes, so that the measure mode runs first on a "
        "machine no mode has compiled on yet",
    )
    p.add_argument(
        "--build-group",
        type=int,
        help="the measure path compiles up to N candidates of a workload as one library (default: dragon measure's, 1)",
    )
    p.add_argument(
        "--also-build-group",
        type=int,
        action="append",
        default=[],
        help="also run the measure path with this build group (mode measure-gN, compared with measure); repeatable",
    )
    p.add_argument(
        "--also-build-order",
        choices=("fifo", "longest-first"),
        action="append",
        default=[],
        help="also measure with the build workers taking jobs in this order (the engine's default is fifo)",
    )
    p.add_argument(
        "--measure-again",
        action="store_true",
        help="run the measure mode once more after the other modes (modes run one after the other on "
        "one machine: this shows what running later changes by itself)",
    )
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--min-repeat-ms", type=float, default=5.0)
    p.add_argument(
        "--gpu-timer",
        choices=("blocked", "evaluator"),
        default="blocked",
        help="how the measure modes time CUDA kernels (the baseline: TVM's time_evaluator)",
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)

    from dragon_dsl.engine.targets import local_gpus, resolve_target

    target = json.loads(args.target) if args.target.strip().startswith("{") else args.target
    spec = resolve_target(target)
    kind = "cuda" if spec.is_gpu else "llvm"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # the workloads go to a folder of their own: OUT keeps a few files (the batch, the results files,
    # bench_measure.json, the RPC processes' logs), so that a GPU machine's output folder brings them back
    wl_dir = Path(args.workload_dir) if args.workload_dir else Path(tempfile.mkdtemp(prefix="bench-measure-wl-"))
    batch_info = make_batch(kind, args.candidates, args.workloads, out, args.seed, wl_dir)
    batch = out / "batch.jsonl"
    timing = {"repeat": args.repeat, "min_repeat_ms": args.min_repeat_ms}
    print(f"target {spec.spec}; {batch_info['candidates']} candidates in {batch}", flush=True)

    modes_raw = run_local_modes(args, spec, batch, out, timing)
    rpc_error = run_rpc_mode(args, spec, batch, out, timing, modes_raw) if args.rpc else None

    modes = {name: figures(m) for name, m in modes_raw.items()}
    comparisons = mode_comparisons(args, modes_raw)
    print_report(batch_info, modes, comparisons)
    if comparisons.get("rpc vs measure (local)", {}).get("verdicts_differ"):
        for log in sorted(out.glob("rpc-*.log")):
            print(f"\n{log.name} (last lines):\n  " + "\n  ".join(log_tail(log, 8)))
    report = {
        "target": spec.spec,
        "level": args.level,
        "batch": batch_info,
        "modes": modes,
        "comparisons": comparisons,
        "stats": {n: m["stats"] for n, m in modes_raw.items()},
        "gpus": list(local_gpus()),
        "cpu_count": os.cpu_count(),
        "rpc_error": rpc_error,
    }
    (out / "bench_measure.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten: {out / 'bench_measure.json'}")
    if any(c["verdicts_differ"] for c in comparisons.values()):
        return 1
    return 3 if rpc_error else 0


def run_local_modes(args, spec, batch: Path, out: Path, timing: dict) -> dict:
    """The local modes, one after the other in the module docstring's order: mode name -> its raw
    figures (`run_baseline`, `run_measure`)."""
    modes_raw: dict = {}

    def baseline() -> None:
        modes_raw["baseline"] = run_baseline(spec, batch, args.level, args.workers, timing)
        print(f"baseline: {modes_raw['baseline']['wall_s']:.1f} s", flush=True)

    if not args.skip_baseline and not args.baseline_last:
        baseline()
    modes_raw["measure"] = run_measure(
        spec,
        batch,
        out / "results-measure.jsonl",
        args.level,
        args.workers,
        timing,
        build_group=args.build_group,
        gpu_timer=args.gpu_timer,
    )
    print(f"measure: {modes_raw['measure']['wall_s']:.1f} s", flush=True)
    for order in args.also_build_order:
        modes_raw[f"measure-{order}"] = run_measure(
            spec, batch, out / f"results-measure-{order}.jsonl", args.level, args.workers, timing, build_order=order
        )
        print(f"measure-{order}: {modes_raw[f'measure-{order}']['wall_s']:.1f} s", flush=True)
    for g in args.also_build_group:
        modes_raw[f"measure-g{g}"] = run_measure(
            spec, batch, out / f"results-measure-g{g}.jsonl", args.level, args.workers, timing, build_group=g
        )
        print(f"measure-g{g}: {modes_raw[f'measure-g{g}']['wall_s']:.1f} s", flush=True)
    if not args.skip_baseline and args.baseline_last:
        baseline()
    if args.measure_again:  # the same mode after the others: what running later alone changes
        modes_raw["measure-again"] = run_measure(
            spec,
            batch,
            out / "results-measure-again.jsonl",
            args.level,
            args.workers,
            timing,
            build_group=args.build_group,
            gpu_timer=args.gpu_timer,
        )
        print(f"measure-again: {modes_raw['measure-again']['wall_s']:.1f} s", flush=True)
    return modes_raw


def run_rpc_mode(args, spec, batch: Path, out: Path, timing: dict, modes_raw: dict) -> str | None:
    """The rpc mode (into MODES_RAW["rpc"]) through a tracker and servers started here; why it could
    not run, or None."""
    from dragon_dsl.engine.targets import local_gpus

    if spec.is_gpu:
        n = max(1, len(local_gpus()))
        gpus = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()] or [
            str(i) for i in range(n)
        ]
        # a library built without a GPU holds CUDA source, which the server compiles when it loads
        # it: with nvcc (on its PATH), as the local path's builders do, for the same binary
        from dragon_dsl.engine.nvcc import ensure_on_path

        ensure_on_path()
        env_for = lambda i: {"CUDA_VISIBLE_DEVICES": gpus[i], "TVM_CUDA_COMPILE_MODE": "nvcc"}  # noqa: E731
    else:
        n = 1
        threads = str(spec.num_cores or os.cpu_count() or 1)
        env_for = lambda i: {"TVM_NUM_THREADS": threads}  # noqa: E731 - as the local CPU device worker
    try:
        device, procs = start_rpc(n, env_for, out, no_fork=spec.is_gpu)
    except RpcUnavailable as exc:  # the local figures are still reported and written
        print(f"rpc: not measured: {exc}", flush=True)
        return str(exc)
    try:
        modes_raw["rpc"] = run_measure(
            spec,
            batch,
            out / "results-rpc.jsonl",
            args.level,
            args.workers,
            timing,
            device=device,
            build_group=args.build_group,
            seconds=args.rpc_seconds,
            gpu_timer=args.gpu_timer,
        )
    finally:
        stop_rpc(procs)
    print(f"rpc: {modes_raw['rpc']['wall_s']:.1f} s", flush=True)
    return None


def mode_comparisons(args, modes_raw: dict) -> dict:
    """The verdict and latency comparisons (`compare`) of each mode with the one it is measured against."""
    comparisons = {}
    if "baseline" in modes_raw:
        comparisons["measure vs baseline"] = compare(modes_raw["baseline"]["rows"], modes_raw["measure"]["rows"])
    for order in args.also_build_order:
        comparisons[f"measure-{order} vs measure"] = compare(
            modes_raw["measure"]["rows"], modes_raw[f"measure-{order}"]["rows"]
        )
    if args.measure_again:
        comparisons["measure-again vs measure"] = compare(
            modes_raw["measure"]["rows"], modes_raw["measure-again"]["rows"]
        )
    for g in args.also_build_group:
        comparisons[f"measure-g{g} vs measure"] = compare(
            modes_raw["measure"]["rows"], modes_raw[f"measure-g{g}"]["rows"]
        )
    if "rpc" in modes_raw:
        rpc = modes_raw["rpc"]
        comparisons["rpc vs measure (local)"] = compare(
            modes_raw["measure"]["rows"], rpc["rows"], None if rpc["complete"] else rpc["rows"]
        )
    return comparisons


if __name__ == "__main__":
    sys.exit(main())
