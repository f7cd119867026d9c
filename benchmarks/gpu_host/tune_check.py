"""On a GPU machine: tune workloads with MetaSchedule through the engine, import the
databases as Dragon scripts, and run `dragon-check --level time --target cuda` on the
best script of each workload (the engine's side of the stock-vs-engine tuning comparison of
benchmarks/gpu_engine_smoke.py --part tune).

    python benchmarks/gpu_host/tune_check.py --json OUT/gpu.json --out OUT --trials 64 \
        --workloads matmul_1024,c2d_1,gmm_2,dep_0,nrm_2

Writes, under --out: the imported scripts and workloads (scripts/), the dragon-check
JSON (check_time.json) and its text output (check_time.txt); the tuning figures go
into the --json report in the format of benchmarks/gpu_engine_smoke.py, so that
script's `--mode stock` run adds the stock column to the same table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu_engine_smoke as smoke  # noqa: E402

smoke.TUNE_WORKLOADS.setdefault("dep_0", ("DEP", 0))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--workloads", default="matmul_1024,c2d_1,gmm_2,dep_0,nrm_2")
    ap.add_argument("--no-check", action="store_true", help="tune only (the wall-time comparison)")
    ap.add_argument(
        "--build-group",
        type=int,
        default=1,
        help="candidates of a round compiled as one library (Engine(build_group=)); 1: each alone",
    )
    args = ap.parse_args()
    out = Path(args.out)
    scripts = out / "scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    report_path = Path(args.json)
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    report.setdefault("tune", {})
    names = args.workloads.split(",")
    # each run tunes from an empty database: a folder shared between runs (it was /tmp/dragon-tune-NAME)
    # made the second of two runs on one machine continue the first one's search (128 records, not 64)
    used = [n for n in names if any((out / "databases" / n).glob("database_tuning_record.json"))]
    if used:
        print(
            f"error: {out / 'databases'} already holds a database for {', '.join(used)}: give another --out",
            file=sys.stderr,
        )
        return 2
    best_scripts = []
    import time

    from dragon_dsl.engine import Engine

    t0 = time.perf_counter()  # one warm engine for every workload, as the corpus search runs it
    engine = Engine(smoke.TAG, cache=False, timeout_s=180.0, build_group=args.build_group)
    report["build_group"] = args.build_group
    engine.baseline(str(ROOT / "tests" / "data" / "workloads" / "c2d_1.tvmscript"))  # workers up, CUDA context made
    report["engine_startup_s"] = time.perf_counter() - t0
    for name in names:
        work = out / "databases" / name
        work.mkdir(parents=True, exist_ok=True)
        entry = report["tune"].setdefault(name, {})
        entry["trials"] = args.trials
        entry["engine"] = smoke.tune_one(name, "engine", args.trials, verify=True, keep_dir=str(work), engine=engine)
        report_path.write_text(json.dumps(report, indent=2))
        dest = scripts / name
        subprocess.run(
            [
                sys.executable,
                "-m",
                "dragon_dsl.cli.main",
                "import",
                "--database",
                str(work),
                "-o",
                str(dest),
                "--top",
                "1",
            ],
            check=True,
        )
        best_scripts += sorted(str(p) for p in dest.glob("*.dragon"))
    report["engine_stats"] = engine.stats()
    report_path.write_text(json.dumps(report, indent=2))
    engine.close()  # dragon-check starts its own workers: leave it the GPU and the cores
    if args.no_check:
        return 0
    cmd = [sys.executable, "-m", "dragon_dsl.cli.check", *best_scripts, "--level", "time", "--target", "cuda"]
    for fmt, name in (("json", "check_time.json"), ("text", "check_time.txt")):
        r = subprocess.run(cmd + ["--format", fmt], capture_output=True, text=True)
        (out / name).write_text(r.stdout + (r.stderr if fmt == "text" else ""))
        print(f"dragon-check --format {fmt}: exit {r.returncode}", file=sys.stderr)
    (out / "check_time.cmd").write_text(
        " ".join(
            [
                "dragon-check",
                *[str(Path(p).relative_to(out)) for p in best_scripts],
                "--level",
                "time",
                "--target",
                "cuda",
            ]
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
