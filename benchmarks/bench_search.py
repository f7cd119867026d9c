"""Search throughput: workloads searched per CPU-hour (or GPU-hour) with a trial budget.

    python benchmarks/bench_search.py --count 6 --budget 8                     # llvm, this machine
    python benchmarks/bench_search.py --target cuda --count 6 --budget 64     # on a GPU machine

Generates `--count` workloads with the workload generator (`--families`, `--seed`;
`--small` keeps every dimension at most 64, so a CPU figure reflects the search and not
one huge matmul), runs the search driver on them through one warm engine and prints:
engine start-up (paid once per run), seconds per workload (median and mean, with the
baselines) and workloads per hour of the machine (3600 / mean seconds per workload;
per CPU-hour means per hour of this whole machine, whose cores the engine uses).
`--json FILE` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def small_specs(count: int, seed: int, families):
    """Specs whose dimensions are all at most 64, spread round-robin over the families."""
    from dragon_dsl.corpus.generator import generate

    by_family: dict = {}
    for spec in generate(count * 200, seed=seed, families=families, max_draws=count * 20000):
        if all(not isinstance(v, int) or v <= 64 for _, v in spec.params):
            by_family.setdefault(spec.family, []).append(spec)
    out = []
    while len(out) < count and any(by_family.values()):
        for fam in sorted(by_family):
            if by_family[fam] and len(out) < count:
                out.append(by_family[fam].pop(0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default='{"kind": "llvm", "num-cores": 2}', help="llvm, cuda, a tag or JSON")
    ap.add_argument("--budget", type=int, default=8)
    ap.add_argument("--count", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--families", help="comma-separated (default: all)")
    ap.add_argument("--small", action="store_true", help="only workloads with every dimension <= 64")
    ap.add_argument("--cost-model", choices=("xgb", "random"), default="xgb")
    ap.add_argument("--per-iter", type=int, default=0, help="trials per round (default min(budget, 64))")
    ap.add_argument("--workloads", help="an existing workloads folder instead of generating one")
    ap.add_argument("--json")
    args = ap.parse_args()

    from dragon_dsl.corpus.generator import generate, write
    from dragon_dsl.corpus.search_run import SearchConfig, SearchRun
    from dragon_dsl.engine import Engine
    from dragon_dsl.engine.targets import resolve_target

    target = resolve_target(json.loads(args.target) if args.target.startswith("{") else args.target).spec
    families = args.families.split(",") if args.families else None
    with tempfile.TemporaryDirectory() as tmp:
        wdir = Path(args.workloads) if args.workloads else Path(tmp) / "workloads"
        if not args.workloads:
            specs = (
                small_specs(args.count, args.seed, families)
                if args.small
                else generate(args.count, seed=args.seed, families=families)
            )
            write(specs, wdir)
        cfg = SearchConfig(
            target=target,
            budget=args.budget,
            seed=args.seed,
            cost_model=args.cost_model,
            num_trials_per_iter=args.per_iter or min(args.budget, 64),
            cache=False,
        )
        t0 = time.perf_counter()
        engine = Engine(target, timeout_s=cfg.timeout_s, cache=False)
        run = SearchRun(Path(tmp) / "run", wdir, cfg)
        first = run.select(limit=1)
        # start-up: workers up, first build and run done (on the first workload's baseline)
        engine.baseline(str(wdir / f"{first[0]['name']}.tvmscript"))
        startup = time.perf_counter() - t0
        summary = run.run(limit=args.count, engine=engine)
        engine.close()
        records = [json.loads(p.read_text()) for p in sorted((run.records_dir).glob("*.json"))]
    per = summary.per_workload_s
    mean = statistics.mean(per)
    report = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "target": target,
            "load_average": os.getloadavg(),
        },
        "budget": args.budget,
        "workloads": len(per),
        "engine_startup_s": startup,
        "s_per_workload_median": statistics.median(per),
        "s_per_workload_mean": mean,
        "workloads_per_hour": 3600 / mean,
        "trials": summary.trials,
        "failed_workloads": summary.failed,
        "failed_candidates": summary.failed_candidates,
        "per_workload": {
            r["workload"]: {"s": round(r["wall_s"], 2), "trials": r["trials"], "status": r["status"]} for r in records
        },
    }
    unit = "GPU" if resolve_target(target).is_gpu else "CPU"
    print(f"| target | budget | workloads | start-up s | s/workload (median / mean) | workloads per {unit}-hour |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {json.dumps(target)} | {args.budget} | {len(per)} | {startup:.1f} | "
        f"{report['s_per_workload_median']:.1f} / {mean:.1f} | {report['workloads_per_hour']:.0f} |"
    )
    print(
        f"\n{summary.trials} trials, {summary.failed} failed workloads, {summary.failed_candidates} failed "
        f"candidates; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    for name, r in report["per_workload"].items():
        print(f"  {name}: {r['s']} s, {r['trials']} trials, {r['status']}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
