"""First-answer correctness on held-out rows: the model's first (greedy) script, replayed, built and
checked numerically by the measurement engine (results cache off).

    python -m dragon_model.evaluate CORPUS_DIR --model MODEL_DIR [--splits test_family] [--limit N]
                                    [--level verify|time] [--jobs N] [--max-seconds S] [--renamed-seed S]
                                    [-o FIG.json]

One answer per distinct prompt (a construction prompt is the workload; an improvement prompt
is the workload and the script to improve). The first answer is what `dragon suggest` would
show first: the greedy script under the grammar and replay constraints, and, when the engine
rejects it (a build error, a numeric mismatch), the longest statement prefix that passes
(`api.repair`). Both figures are reported: `correct_as_generated` (before the cut) and
`first_answer_correctness` (after). At level `time` a verified answer more than SLOW_FACTOR (10)
times slower than the unscheduled program (the CPUs' baseline, `levels.is_slow`) gets status `slow`:
a failure in every correctness figure (correct, correct as generated, pass@k), as in `dragon eval`,
though its speed still counts in the speed figures. Besides correctness: non-trivial answers (at
least one instruction: the empty script is correct but schedules nothing), statements rolled back
by the checker/TVM, seconds per answer, and at level `time` the speed of the verified answers
(`slow` ones included, at their speed).

`--jobs N` answers N prompts at once in N processes (each with its own model copy on the CPU
and a one-worker engine).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def prompts_of(corpus, splits=("test_family",), target: str = "llvm", limit: int = 0) -> list:
    """(task, row) per distinct prompt; with `limit`, a deterministic spread of at most `limit`
    prompts per task."""
    from dragon_model.data import load_rows

    rows = load_rows(corpus, splits=list(splits), target_kind=target)
    by_task: dict = {"construction": [], "improvement": []}
    seen = set()
    for r in rows:
        key = (r["workload_hash"], r["task"], r.get("prompt_script") if r["task"] == "improvement" else None)
        if key not in seen:
            seen.add(key)
            by_task.setdefault(r["task"], []).append(r)
    if limit:  # evenly over the list (sorted by family and workload), so every family is in
        for task, items in by_task.items():
            if len(items) > limit:
                by_task[task] = [items[i * len(items) // limit] for i in range(limit)]
    return [(task, r) for task, items in by_task.items() for r in items]


def status_of(result, unscheduled_us: float | None) -> str:
    """An engine result's status, `slow` for a verified one more than SLOW_FACTOR times slower than
    the unscheduled program (a failure, not a correct answer)."""
    from dragon_dsl.levels import is_slow

    return "slow" if result.ok and is_slow(result.latency_us, unscheduled_us) else result.status.value


def answer(gen, engine, task: str, r: dict, level: str, k: int = 1) -> dict:
    """The first answer to one prompt, measured (and cut back when it fails); with k > 1 also
    k - 1 sampled answers (temperature 0.8), measured as written: best of k, as `dragon suggest`
    shows it. At level `time` a verified answer more than 10x slower than the unscheduled program
    is `slow` (`status_of`): not correct, and no pass in pass@k."""
    from dragon_dsl import to_trace_json
    from dragon_model.api import repair
    from dragon_model.data import body_of_text, row_target

    slower = body_of_text(r["prompt_script"]) if task == "improvement" and r.get("prompt_script") else None
    t0 = time.time()
    g = gen.generate(r["workload_text"], row_target(r), slower, temperature=0.0)
    gen_s = time.time() - t0
    fixed = repair(engine, r["workload_text"], g.body, level)
    res = fixed.result
    unscheduled_us = corpus_us = speedup = None
    if level == "time" and res.ok and res.latency_us:  # the baselines, timed here in the same engine
        base = engine.baseline(r["workload_text"], kind="unscheduled")
        unscheduled_us = base.latency_us if base.ok else None
        (best,) = engine.measure(r["workload_text"], [to_trace_json(r["script"])], level=level, use_cache=False)
        corpus_us = best.latency_us if best.ok else None
        speedup = unscheduled_us / res.latency_us if unscheduled_us else None
    extra = {}
    if k > 1:
        bodies = [
            gen.generate(r["workload_text"], row_target(r), slower, temperature=0.8, seed=i).body for i in range(1, k)
        ]
        results = engine.measure(r["workload_text"], [to_trace_json(b) for b in bodies], level=level, use_cache=False)
        if level == "time" and unscheduled_us is None and any(x.ok for x in results):
            base = engine.baseline(r["workload_text"], kind="unscheduled")
            unscheduled_us = base.latency_us if base.ok else None
        passed = [x for x in [fixed.first_result, *results] if status_of(x, unscheduled_us) == "ok"]
        best_us = (
            min([x.latency_us for x in [res, *results] if x.ok and x.latency_us] or [None]) if level == "time" else None
        )
        extra = {
            "k": k,
            "k_passed_as_generated": len(passed),
            "best_of_k_us": best_us,
            "best_of_k_speedup": unscheduled_us / best_us if unscheduled_us and best_us else None,
        }
    return extra | {
        "task": task,
        "workload": r["workload"],
        "family": r["family"],
        "status": status_of(res, unscheduled_us),
        "status_as_generated": status_of(fixed.first_result, unscheduled_us),
        "dropped": fixed.dropped,
        "statements": g.statements - fixed.dropped,
        "statements_generated": g.statements,
        "rejected": g.rejected,
        "stop": g.stop,
        "generate_seconds": round(gen_s, 2),
        "seconds": round(time.time() - t0, 2),
        "message": fixed.first_result.message[:200],
        "script": fixed.body,
        "script_as_generated": g.body if fixed.dropped else None,
        "latency_us": res.latency_us,
        "speedup_vs_unscheduled": speedup,
        "corpus_best_us": corpus_us,
        "unscheduled_us": unscheduled_us,
    }


def summarize(answers: list) -> dict:
    """Per-task figures from the answers (the order of tasks as they come)."""
    tasks: dict = {}
    speed: dict = {}
    for task in dict.fromkeys(a["task"] for a in answers):
        mine = [a for a in answers if a["task"] == task]
        n = len(mine)
        ok = sum(a["status"] == "ok" for a in mine)
        tasks[task] = {
            "answers": n,
            "correct": ok,
            "first_answer_correctness": ok / n,
            "correct_as_generated": sum(a["status_as_generated"] == "ok" for a in mine),
            "cut_back": sum(a["dropped"] > 0 for a in mine),
            "nontrivial": sum(a["statements"] > 0 and a["status"] == "ok" for a in mine),
            "statements_rolled_back": sum(a["rejected"] for a in mine),
            "seconds_per_answer": round(sum(a["seconds"] for a in mine) / n, 2),
            "stops": _counts(a["stop"] for a in mine),
            **(
                {"pass_at_k": sum(a["k_passed_as_generated"] > 0 for a in mine) / n, "k": mine[0]["k"]}
                if "k" in mine[0]
                else {}
            ),
            "failures": _counts(a["status"] for a in mine if a["status"] != "ok"),
            "families": sorted({a["family"] for a in mine}),
        }
        speedups = sorted(a["speedup_vs_unscheduled"] for a in mine if a["speedup_vs_unscheduled"])
        if speedups:  # level "time": verified answers, slow ones too, against the program and the corpus' best
            vs_best = sorted(
                a["corpus_best_us"] / a["latency_us"]
                for a in mine
                if a["speedup_vs_unscheduled"] and a.get("corpus_best_us")
            )
            speed[task] = {
                "timed": len(speedups),
                "median_speedup_vs_unscheduled": speedups[len(speedups) // 2],
                "at_least_1x": sum(x >= 1.0 for x in speedups),
                "median_fraction_of_corpus_best": vs_best[len(vs_best) // 2] if vs_best else None,
            }
            best_k = sorted(a["best_of_k_speedup"] for a in mine if a.get("best_of_k_speedup"))
            if best_k:
                speed[task] |= {
                    "median_best_of_k_speedup": best_k[len(best_k) // 2],
                    "best_of_k_at_least_1x": sum(x >= 1.0 for x in best_k),
                }
    out = {"tasks": tasks}
    if speed:
        out["speed"] = speed
    return out


def _counts(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


_WORKER: dict = {}


def _init_worker(model_path, spec, max_seconds, timeout_s):
    import atexit

    import torch

    from dragon_dsl.engine import Engine
    from dragon_model.generate import Generator

    torch.set_num_threads(1)
    _WORKER["gen"] = Generator.from_path(model_path, max_seconds=max_seconds)
    _WORKER["engine"] = engine = Engine(spec, cache=False, timeout_s=timeout_s, workers=1)
    atexit.register(engine.close)


def _answer_in_worker(task, r, level, k):
    return answer(_WORKER["gen"], _WORKER["engine"], task, r, level, k)


def evaluate(
    corpus,
    model_path,
    *,
    splits=("test_family",),
    target: str = "llvm",
    limit: int = 0,
    level: str = "verify",
    jobs: int = 1,
    max_seconds: float = 0.0,
    timeout_s: float = 120.0,
    k: int = 1,
    tasks=("construction", "improvement"),
    renamed_seed=None,
    log=print,
) -> dict:
    import random

    from dragon_dsl.engine import Engine
    from dragon_model.generate import Generator
    from dragon_model.renaming import renamed_row

    items = [(t, r) for t, r in prompts_of(corpus, splits, target, limit) if t in tasks]
    if renamed_seed is not None:  # every workload's blocks and buffers under random names
        rng = random.Random(renamed_seed)
        items = [(t, renamed_row(r, rng)) for t, r in items]
    spec = {"kind": "llvm", "num-cores": 1} if target == "llvm" else target
    figures: dict = {
        "model": str(model_path),
        "corpus": str(corpus),
        "splits": list(splits),
        "level": level,
        "target": spec,
        "max_seconds": max_seconds,
        "jobs": jobs,
        "timeout_s": timeout_s,
        "k": k,
        "renamed_seed": renamed_seed,
    }
    answers: list = []

    def done(a):
        answers.append(a)
        log(
            f"[{len(answers)}/{len(items)}] {a['task']} {a['workload']}: {a['status']}"
            f" (as generated: {a['status_as_generated']}), {a['statements']} statements, {a['stop']}, {a['seconds']} s"
        )

    t0 = time.time()
    if jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(
            jobs,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(str(model_path), spec, max_seconds, timeout_s),
        ) as pool:
            futures = {pool.submit(_answer_in_worker, task, r, level, k): i for i, (task, r) in enumerate(items)}
            for f in as_completed(futures):
                done(f.result() | {"index": futures[f]})
        answers.sort(key=lambda a: a.pop("index"))  # the prompts' order, whatever order they finished in
    else:
        gen = Generator.from_path(model_path, max_seconds=max_seconds)
        engine = Engine(spec, cache=False, timeout_s=timeout_s)
        try:
            for task, r in items:
                done(answer(gen, engine, task, r, level, k))
        finally:
            engine.close()
    figures["wall_seconds"] = round(time.time() - t0, 1)
    figures.update(summarize(answers))
    figures["answers"] = answers
    return figures


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dragon_model.evaluate", description=__doc__.split("\n\n")[0])
    p.add_argument("corpus")
    p.add_argument("--model", required=True)
    p.add_argument("--splits", default="test_family", help="comma-separated splits")
    p.add_argument("--target", default="llvm")
    p.add_argument("--limit", type=int, default=0, help="at most N prompts per task")
    p.add_argument("--level", choices=("build", "verify", "time"), default="verify")
    p.add_argument("--jobs", type=int, default=1, help="prompts answered at once, one process each")
    p.add_argument(
        "--max-seconds",
        type=float,
        default=0.0,
        help="end a script at the next statement after this many seconds (0: no limit)",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per build/run in the engine")
    p.add_argument("--k", type=int, default=1, help="also sample k - 1 answers: pass@k and best of k")
    p.add_argument("--tasks", default="construction,improvement", help="comma-separated tasks to answer")
    p.add_argument(
        "--renamed-seed",
        type=int,
        default=None,
        help="rename every workload's blocks and allocated buffers at random, from this seed, "
        "in its scripts too: the same programs under names the model has never seen",
    )
    p.add_argument("-o", "--output", help="write the figures (JSON) there")
    args = p.parse_args(argv)
    tasks = tuple(t for t in args.tasks.split(",") if t)
    bad = [t for t in tasks if t not in ("construction", "improvement")]
    if bad or not tasks:
        p.error(f"--tasks {args.tasks!r}: expected construction and/or improvement, comma-separated")
    if args.k < 1 or args.jobs < 1:
        p.error("--k and --jobs must be at least 1")
    fig = evaluate(
        args.corpus,
        args.model,
        splits=args.splits.split(","),
        target=args.target,
        limit=args.limit,
        level=args.level,
        jobs=args.jobs,
        max_seconds=args.max_seconds,
        timeout_s=args.timeout,
        k=args.k,
        tasks=tasks,
        renamed_seed=args.renamed_seed,
        log=lambda m: print(m, file=sys.stderr, flush=True),
    )
    text = json.dumps(fig, indent=2) + "\n"
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text, encoding="utf-8")
    summary = {t: {k: v for k, v in f.items() if k != "families"} for t, f in fig["tasks"].items()}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
