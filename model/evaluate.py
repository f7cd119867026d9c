"""First-answer correctness on held-out rows: the model's first (greedy) script, replayed, built and
checked numerically by the measurement engine (results cache off).

    python -m dragon_model.evaluate CORPUS_DIR --model MODEL_DIR [--splits test_family] [--limit N] [-o FIG.json]

One answer per distinct prompt (a construction prompt is the workload; an improvement prompt
is the workload and the script to improve). Besides correctness, it reports how many answers
are non-trivial (at least one instruction: the empty script is correct but schedules nothing),
statements rolled back by the checker/TVM, and seconds per answer.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def evaluate(corpus, model_path, *, splits=("test_family",), target: str = "llvm", limit: int = 0,
             level: str = "verify", log=print) -> dict:
    from dragon_dsl import to_trace_json
    from dragon_dsl.engine import Engine
    from dragon_model.data import body_of_text, load_rows, row_target
    from dragon_model.generate import Generator

    rows = load_rows(corpus, splits=list(splits), target_kind=target)
    prompts, seen = [], set()
    for r in rows:
        key = (r["workload_hash"], r["task"], r.get("prompt_script") if r["task"] == "improvement" else None)
        if key not in seen:
            seen.add(key)
            prompts.append(r)
    by_task: dict = {"construction": [], "improvement": []}
    for r in prompts:
        by_task.setdefault(r["task"], []).append(r)
    if limit:  # a deterministic spread over workloads: every k-th prompt of each task
        for task, items in by_task.items():
            step = max(1, len(items) // limit)
            by_task[task] = items[::step][:limit]
    gen = Generator.from_path(model_path)
    spec = {"kind": "llvm", "num-cores": 1} if target == "llvm" else target
    engine = Engine(spec, cache=False, timeout_s=120.0)
    figures: dict = {"model": str(model_path), "corpus": str(corpus), "splits": list(splits), "level": level, "tasks": {}}
    answers = []
    try:
        for task, items in by_task.items():
            if not items:
                continue
            ok = nontrivial = rejected = 0
            seconds = 0.0
            for r in items:
                slower = body_of_text(r["prompt_script"]) if task == "improvement" and r.get("prompt_script") else None
                t0 = time.time()
                g = gen.generate(r["workload_text"], row_target(r), slower, temperature=0.0)
                seconds += time.time() - t0
                (res,) = engine.measure(r["workload_text"], [to_trace_json(g.body)], level=level, use_cache=False)
                ok += res.ok
                nontrivial += g.statements > 0
                rejected += g.rejected
                speedup = (r["unscheduled_us"] / res.latency_us
                           if res.ok and res.latency_us and r.get("unscheduled_us") else None)
                answers.append({"task": task, "workload": r["workload"], "family": r["family"], "status": res.status.value,
                                "statements": g.statements, "rejected": g.rejected, "stop": g.stop,
                                "seconds": round(time.time() - t0, 2), "message": res.message[:200],
                                "latency_us": res.latency_us, "speedup_vs_unscheduled": speedup,
                                "corpus_best_us": r.get("latency_us")})
                log(f"{task} {r['workload']}: {res.status.value}, {g.statements} statements, {g.rejected} rolled back")
            n = len(items)
            mine = [a for a in answers if a["task"] == task]
            speedups = sorted(a["speedup_vs_unscheduled"] for a in mine if a["speedup_vs_unscheduled"])
            if speedups:  # level "time": how fast the correct answers are (the corpus' unscheduled latency)
                figures.setdefault("speed", {})[task] = {
                    "timed": len(speedups), "median_speedup_vs_unscheduled": speedups[len(speedups) // 2],
                    "at_least_1x": sum(x >= 1.0 for x in speedups)}
            figures["tasks"][task] = {"answers": n, "correct": ok, "first_answer_correctness": ok / n,
                                      "nontrivial": nontrivial, "statements_rolled_back": rejected,
                                      "seconds_per_answer": round(seconds / n, 2),
                                      "families": sorted({r["family"] for r in items})}
    finally:
        engine.close()
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
    p.add_argument("-o", "--output", help="write the figures (JSON) there")
    args = p.parse_args(argv)
    fig = evaluate(args.corpus, args.model, splits=args.splits.split(","), target=args.target, limit=args.limit,
                   level=args.level, log=lambda m: print(m, file=sys.stderr))
    text = json.dumps(fig, indent=2) + "\n"
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(text, encoding="utf-8")
    summary = {t: {k: v for k, v in f.items() if k != "families"} for t, f in fig["tasks"].items()}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
