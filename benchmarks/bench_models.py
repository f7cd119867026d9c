"""New models against the current ones, on this machine, in one run: first-answer generation time on
the CPU (the CUDA and the llvm model) and `dragon suggest` wall time on llvm workloads (prints
figures and ratios; not a timed test).

    python benchmarks/bench_models.py --cuda-new DIR --llvm-new DIR [--count 5] [--suggest-count 5] [--out F.json]

The current models are the shipped ones (model/weights/cuda, model/weights/llvm) unless
--cuda-current / --llvm-current name others; a side left without a new model is skipped. The
workloads: the first --count of the held-out real operators (`dragon workloads
--held-out-operators`, the CUDA side) and of the llvm corpus' held-out families (conv2d_dilated,
rms_norm, softmax: `dragon workloads --families ... --seed 2027`; with --llvm-tasks SPLIT, that
split's tasks of the real networks instead; --cuda-tasks SPLIT likewise for the CUDA side), the same
for both models.
Generation is greedy, one answer per workload, on the CPU; each model is warmed up first (TVM's
import, the grammar compiler). `dragon suggest` is `dragon_model.api.recommend` as the command
runs it (k=4, level time: the baseline, the candidates, the search fallback when none verifies),
wall time from the request to the answer. Goals: first answers in
seconds, `dragon suggest` on llvm in a median of at most 15 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dragon_dsl.cli.check import parse_target  # noqa: E402
from dragon_dsl.engine.targets import resolve_target  # noqa: E402

LLVM_HELD_OUT = "conv2d_dilated,rms_norm,softmax"


def workloads(args_list: list, count: int) -> list:
    folder = Path(tempfile.mkdtemp(prefix="bench-models-"))
    subprocess.run(
        [sys.executable, "-m", "dragon_dsl.cli.main", "workloads", *args_list, "-o", str(folder)],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    return sorted(folder.glob("*.tvmscript"))[:count]


def _tasks_draw(split: str, n: int, max_flops: str) -> list:
    """`dragon workloads` flags for N tasks of the real networks' SPLIT, at most MAX_FLOPS each."""
    tasks = ROOT / "data" / "tasks" / "tasks.jsonl.gz"
    flags = ["--tasks", str(tasks), "--split", split, "--count", str(n), "--seed", "2027"]
    return flags + ["--max-flops", max_flops, "--max-bytes", "6.4e7"]


def generation_times(models: dict, files: list, warm, target: str) -> dict:
    """name -> [(seconds, statements, tokens, stop)] of each workload's greedy first answer. Both
    models are loaded and warmed up on WARM (not timed) first, and take turns going first."""
    from dragon_model.generate import Generator

    gens = {name: Generator.from_path(path) for name, path in models.items()}
    for gen in gens.values():
        gen.generate(warm, target=target)
    out: dict = {name: [] for name in gens}
    for i, f in enumerate(files):
        for name in list(gens) if i % 2 == 0 else list(gens)[::-1]:
            t0 = time.perf_counter()
            g = gens[name].generate(f, target=target)
            out[name].append((time.perf_counter() - t0, g.statements, g.tokens, g.stop))
    return out


def suggest_times(models: dict, files: list, targets: dict) -> dict:
    """name -> [(seconds, source, verified, speed-up over the unscheduled program)] of `dragon
    suggest` on each name's target; the models take turns going first."""
    from dragon_model.api import recommend

    out: dict = {name: [] for name in models}
    for i, f in enumerate(files):
        for name in list(models) if i % 2 == 0 else list(models)[::-1]:
            t0 = time.perf_counter()
            rec = recommend(str(f), target=targets[name], k=4, model_path=models[name])
            out[name].append((time.perf_counter() - t0, rec.source, rec.verified, rec.speedup_vs_baseline))
    return out


def _median(values: list):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cuda-new", help="the new CUDA model folder")
    p.add_argument("--cuda-current", default=str(ROOT / "model" / "weights" / "cuda"))
    p.add_argument("--llvm-new", help="the new llvm model folder")
    p.add_argument("--llvm-current", default=str(ROOT / "model" / "weights" / "llvm"))
    p.add_argument("--count", type=int, default=5, help="workloads per side for generation (default 5)")
    p.add_argument(
        "--suggest-count", type=int, default=5, help="llvm workloads for dragon suggest (default 5; 0: none)"
    )
    p.add_argument(
        "--cuda-tasks",
        metavar="SPLIT",
        help="CUDA workloads drawn from the real networks' tasks of SPLIT (data/tasks; e.g. validation) instead "
        "of the held-out real operators",
    )
    p.add_argument(
        "--llvm-tasks",
        metavar="SPLIT",
        help="llvm workloads drawn from the real networks' tasks of SPLIT (data/tasks; e.g. test) instead of "
        "the llvm corpus' held-out families",
    )
    p.add_argument("--cuda-target", default="nvidia/nvidia-h100")
    for side in ("current", "new"):
        p.add_argument(
            f"--llvm-{side}-target",
            default="llvm",
            type=parse_target,
            help=f"the target `dragon suggest` builds the {side} model's answers for (default llvm: this machine's "
            'CPU; {"kind": "llvm", "num-cores": 2}: any x86-64)',
        )
    p.add_argument("--out", help="also write every figure here as JSON")
    args = p.parse_args(argv)
    if not (args.cuda_new or args.llvm_new):
        p.error("name at least one new model (--cuda-new, --llvm-new)")

    from rich.console import Console
    from rich.table import Table

    console = Console(width=150)
    report: dict = {}
    sides = []
    # one workload more than timed: the warm-up's
    if args.cuda_new:
        sides.append(
            (
                "cuda",
                args.cuda_target,
                args.cuda_current,
                args.cuda_new,
                workloads(
                    _tasks_draw(args.cuda_tasks, args.count + 1, "2e9")
                    if args.cuda_tasks
                    else ["--held-out-operators"],
                    args.count + 1,
                ),
            )
        )
    if args.llvm_new:
        n = max(args.count, args.suggest_count) + 1
        sides.append(
            (
                "llvm",
                "llvm",
                args.llvm_current,
                args.llvm_new,
                workloads(
                    _tasks_draw(args.llvm_tasks, n, "2e8")
                    if args.llvm_tasks
                    else ["--families", LLVM_HELD_OUT, "--count", str(n), "--seed", "2027", "--max-flops", "2e8"],
                    n,
                ),
            )
        )
    for side, target, current, new, found in sides:
        warm, files = found[-1], found[:-1]
        models = {"current": current, "new": new}
        gen = generation_times(models, files[: args.count], warm, target)
        table = Table(title=f"{side}: greedy first answer on the CPU (seconds)")
        for col in ("workload", "current s", "new s", "new / current", "current stmts", "new stmts", "new stop"):
            table.add_column(col, justify="left" if col == "workload" else "right")
        for f, a, b in zip(files, gen["current"], gen["new"]):
            table.add_row(f.stem[:48], f"{a[0]:.1f}", f"{b[0]:.1f}", f"{b[0] / a[0]:.2f}x", str(a[1]), str(b[1]), b[3])
        console.print(table)
        medians = {k: _median([r[0] for r in v]) for k, v in gen.items()}
        print(
            f"{side}: median first answer {medians['current']:.1f} s (current) -> {medians['new']:.1f} s (new): "
            f"{medians['new'] / medians['current']:.2f}x"
        )
        report[side] = {
            "workloads": [f.stem for f in files[: args.count]],
            "generation": {k: [list(r) for r in v] for k, v in gen.items()},
            "generation_median_s": medians,
        }
        if side == "llvm" and args.suggest_count:
            targets = {"current": args.llvm_current_target, "new": args.llvm_new_target}
            sug = suggest_times(models, files[: args.suggest_count], targets)
            table = Table(title="llvm: dragon suggest, request to answer (seconds)")
            for col in ("workload", "current s", "new s", "current source", "new source", "new speed-up"):
                table.add_column(col, justify="left" if col == "workload" else "right")
            for f, a, b in zip(files, sug["current"], sug["new"]):
                table.add_row(f.stem[:48], f"{a[0]:.1f}", f"{b[0]:.1f}", a[1], b[1], f"{b[3]:.2f}x" if b[3] else "-")
            console.print(table)
            sm = {k: _median([r[0] for r in v]) for k, v in sug.items()}
            print(
                f"llvm: dragon suggest median {sm['current']:.1f} s (current) -> {sm['new']:.1f} s (new): "
                f"{sm['new'] / sm['current']:.2f}x (goal: <= 15 s)"
            )
            # an answer that is the program itself counts 1.0x; one that failed, as nothing gained
            up = {k: _median([r[3] or 1.0 for r in v]) for k, v in sug.items()}
            print(
                f"llvm: dragon suggest's answer over the program as written, median {up['current']:.2f}x (current), "
                f"{up['new']:.2f}x (new) (goal: >= 2x)"
            )
            report["llvm"]["suggest"] = {k: [list(r) for r in v] for k, v in sug.items()}
            report["llvm"]["suggest_median_s"] = sm
            report["llvm"]["suggest_median_speedup"] = up
            report["llvm"]["suggest_targets"] = {k: resolve_target(t).spec for k, t in targets.items()}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
