"""Benchmark of the model's constrained generation on the CPU (prints figures; not a timed test).

    python benchmarks/bench_generation.py [--model model/weights/cuda] [--target nvidia/nvidia-h100]
                                          [--workloads DIR] [--count 3] [--threads N]

Each workload's greedy script is written twice in the same run: on one thread and on the
baseline, torch's thread count (N, default torch's own setting). One thread is what each of
several processes sharing the cores should use (`OMP_NUM_THREADS=1`): oversubscribed, the
per-token time grows several-fold. Prints seconds, tokens per second and the ratio per workload, and checks
that both runs wrote the same script (greedy decoding does not depend on the thread count).
Without --workloads it generates `--count` workloads of the evaluation's set (seed 2027).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=str(ROOT / "model" / "weights" / "cuda"))
    p.add_argument("--target", default="nvidia/nvidia-h100")
    p.add_argument("--workloads", help="a folder of .tvmscript files (default: generated)")
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="the baseline's threads (0: torch's default)")
    args = p.parse_args(argv)

    import torch
    from rich.console import Console
    from rich.table import Table

    from dragon_model.generate import Generator

    baseline_threads = args.threads or torch.get_num_threads()
    folder = Path(args.workloads) if args.workloads else Path(tempfile.mkdtemp(prefix="bench-gen-"))
    if not args.workloads:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "dragon_dsl.cli.main",
                "workloads",
                "--count",
                str(args.count),
                "--seed",
                "2027",
                "--max-flops",
                "2e9",
                "--max-bytes",
                "6.4e7",
                "-o",
                str(folder),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
        )
    files = sorted(folder.glob("*.tvmscript"))[: args.count]
    if not files:
        p.error(f"no .tvmscript files in {folder}")
    one = Generator.from_path(args.model, cpu_threads=1)
    many = Generator(
        one.model,
        one.tokenizer,
        max_statements=one.max_statements,
        allowed=one.allowed,
        literals=one.literals,
        cpu_threads=baseline_threads,
    )
    one.generate(files[0], target=args.target)  # warm-up: TVM's import, the grammar compiler's first use

    table = Table(title=f"greedy generation, {args.model}")
    for col in ("workload", "statements", "tokens", "1 thread s", f"{baseline_threads} threads s", "ratio", "same"):
        table.add_column(col, justify="left" if col == "workload" else "right")
    ratios = []
    for f in files:
        runs = []
        for gen in (one, many):
            t0 = time.perf_counter()
            out = gen.generate(f, target=args.target)
            runs.append((time.perf_counter() - t0, out))
        (t1, a), (tn, b) = runs
        ratios.append(tn / t1)
        table.add_row(
            f.stem[:48],
            str(a.statements),
            str(a.tokens),
            f"{t1:.1f}",
            f"{tn:.1f}",
            f"{tn / t1:.2f}x",
            "yes" if a.body == b.body else "NO",
        )
    Console().print(table)
    print(
        f"median ratio ({baseline_threads} threads / 1 thread): {statistics.median(ratios):.2f}x "
        f"over {len(files)} workload(s); {a.tokens / t1:.0f} tokens/s on one thread for the last one"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
