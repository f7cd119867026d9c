"""Re-verify a built corpus from scratch: every example's scripts, on its own workload text.

    report = verify_corpus("corpus/")          # {"examples", "passed", "share", "failures": [...]}

Per example (nothing is taken from the corpus on trust but the texts themselves):
  * the workload text parses and its structural hash is the row's `workload_hash`;
  * `script` encodes to exactly the row's `trace`, and the prompt script (improvement) encodes;
  * the row is well formed: its split and task are known, an improvement's prompt latency is
    at least the corpus's `slower` factor times the best latency, and test_family rows belong to
    the held-out families while no other split contains one;
  * the script (and the prompt script) build and pass the numeric check against the unscheduled
    workload: Engine level "verify" with the results cache off.
"""

from __future__ import annotations

import json
import time

from dragon_dsl.corpus.build import SPLITS, TASKS, load_corpus

CHUNK = 64  # examples per engine call: a call waits for its slowest build, so few and large


def _static_problems(row: dict, manifest: dict) -> list:
    from dragon_dsl import DragonError, to_trace_json

    problems = []
    held_out = set(manifest["build"]["test_families"])
    if row["split"] not in SPLITS:
        problems.append(f"unknown split {row['split']!r}")
    if row["task"] not in TASKS:
        problems.append(f"unknown task {row['task']!r}")
    if (row["split"] == "test_family") != (row["family"] in held_out):
        problems.append(f"family {row['family']} in split {row['split']} (held out: {sorted(held_out)})")
    try:
        if to_trace_json(row["script"]) != json.loads(row["trace"]):
            problems.append("script does not encode to the row's trace")
    except DragonError as exc:
        problems.append(f"script: {exc}")
    if row["task"] == "improvement":
        if not row["prompt_script"]:
            problems.append("improvement without a prompt script")
        else:
            try:
                to_trace_json(row["prompt_script"])
            except DragonError as exc:
                problems.append(f"prompt script: {exc}")
        slower = manifest["build"]["slower"]
        if (
            row["prompt_latency_us"] is None
            or row["latency_us"] is None
            or row["prompt_latency_us"] < slower * row["latency_us"]
        ):
            problems.append(f"prompt latency {row['prompt_latency_us']} is not >= {slower}x {row['latency_us']}")
    elif row["prompt_script"] is not None:
        problems.append("construction example with a prompt script")
    return problems


def verify_corpus(
    corpus_dir, engine=None, workers=None, timeout_s: float = 60.0, progress=None, device: str = "local"
) -> dict:
    """Re-verify every example (on DEVICE: local, or rpc://HOST:PORT/KEY); the share passing is the
    corpus's figure of merit (goal 1.0)."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.workload import WorkloadError, load_workload, structural_hash

    manifest, splits = load_corpus(corpus_dir)
    rows = [dict(r) for split in SPLITS for r in splits[split]]
    t0 = time.perf_counter()
    failures: dict = {}  # row index -> problems
    first: dict = {}
    for index, row in enumerate(rows):
        if row["id"] in first:
            failures.setdefault(index, []).append(f"duplicate id (row {first[row['id']]} has it too)")
        first.setdefault(row["id"], index)
    own = engine is None
    if own:
        from dragon_dsl.engine import Engine

        engine = Engine(manifest["target"], device=device, workers=workers, timeout_s=timeout_s, cache=False)
    if progress:
        progress("start", total=len(rows))
    try:
        from dragon_dsl.engine import Task

        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            tasks, owners = [], []
            for index, row in enumerate(chunk, start):
                problems = _static_problems(row, manifest)
                try:
                    mod = load_workload(row["workload_text"])
                    if structural_hash(mod) != row["workload_hash"]:
                        problems.append("workload text does not hash to workload_hash")
                except WorkloadError as exc:
                    problems.append(f"workload: {exc}")
                if problems:
                    failures.setdefault(index, []).extend(problems)
                    continue
                scripts = [("script", row["script"])] + (
                    [("prompt script", row["prompt_script"])] if row["task"] == "improvement" else []
                )
                for label, text in scripts:
                    tasks.append(Task(row["workload_text"], to_trace_json(text), level="verify", use_cache=False))
                    owners.append((index, label))
            for (index, label), result in zip(owners, engine.run(tasks), strict=True):
                if not result.ok:
                    failures.setdefault(index, []).append(f"{label}: {result.status.value}: {result.message[:200]}")
            if progress:
                progress("advance", n=len(chunk), failed=len(failures))
    finally:
        if own:
            engine.close()
    passed = len(rows) - len(failures)
    return {
        "corpus": str(corpus_dir),
        "examples": len(rows),
        "passed": passed,
        "share": passed / len(rows) if rows else 1.0,
        "by_split": {s: len(splits[s]) for s in SPLITS},
        "failures": [
            {"id": rows[i]["id"], "split": rows[i]["split"], "problems": p} for i, p in sorted(failures.items())
        ],
        "wall_s": time.perf_counter() - t0,
    }
