"""Mutation rounds of the label search: new candidates near the fastest measured ones.

A label is the fastest verified script of a task's candidates. One round of sampling gives a few
candidates a task (the design spaces of small tasks hold few distinct scripts), so the labels
stay near dlight's speed. A mutation round takes each task's fastest measured scripts and changes
one sampled decision of each at a time, as MetaSchedule's MutateTileSize and MutateUnroll do:

- a `sample_perfect_tile` decision becomes another factorization of the same loop extent into as
  many factors, its innermost factor within the instruction's `max_innermost_factor`;
- a `sample_categorical` decision becomes another index into its candidates (unroll steps,
  thread counts).

Each mutant is the parent's trace with that one decision changed; it is kept when its script
encodes back to the same trace and passes the compile check every candidate passes (replay, the
GPU checks, `tvm.compile`: `dragon_dsl.tvm.compile.scripts.checked_scripts`, as the sampled
candidates are), and is added to the task's record as a script of space `mutation`:
`records --batch` then measures it like any candidate, and the label report counts its wins.

    python -m dragon_model.mutation PRE_DIR [...] --measured RESULTS.jsonl [--top 2] [--per-parent 4]

A record's mutants are written once per parent (a script's text is never added twice), so a run
that stopped goes on where it was.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

MUTABLE = ("SamplePerfectTile", "SampleCategorical")


def _divisors(n: int) -> list:
    return [d for d in range(1, n + 1) if n % d == 0]


def random_tile(extent: int, n: int, max_innermost: int, rng: random.Random) -> list:
    """A random factorization of EXTENT into N factors whose last is at most MAX_INNERMOST (0: any)."""
    inner = [d for d in _divisors(extent) if not max_innermost or d <= max_innermost]
    last = rng.choice(inner)
    rest, factors = extent // last, []
    for _ in range(n - 2):
        f = rng.choice(_divisors(rest))
        factors.append(f)
        rest //= f
    return [rest, *factors, last] if n > 1 else [extent]


def mutated_traces(trace: list, rng: random.Random, count: int) -> list:
    """Up to COUNT distinct traces, each TRACE (plain trace JSON: [instructions, decisions]) with one
    decision of a `sample_perfect_tile` or `sample_categorical` changed; none when it has no such
    decision or none can change (a tile of a prime extent below its cap keeps its factorizations)."""
    insts, decisions = trace
    sites = [k for k, (index, _d) in enumerate(decisions) if insts[index][0] in MUTABLE]
    out, seen = [], {json.dumps(trace, sort_keys=True)}
    for _ in range(20 * count):
        if len(out) >= count or not sites:
            break
        k = rng.choice(sites)
        index, old = decisions[k]
        kind, _inputs, attrs, _outputs = insts[index]
        if kind == "SamplePerfectTile":
            new = random_tile(math.prod(old), int(attrs[0]), int(attrs[1]), rng)
        else:
            new = rng.randrange(len(attrs[0]))
        if new == old:
            continue
        mutant = copy.deepcopy(trace)
        mutant[1][k] = [index, new]
        key = json.dumps(mutant, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(mutant)
    return out


def mutate_record(record: dict, measured: dict, top: int, per_parent: int, seed: int, target) -> int:
    """Adds to RECORD (in place) the checked mutants of its TOP fastest measured scripts, PER_PARENT
    tries each; returns how many scripts were added."""
    from collections import Counter

    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.compile.scripts import checked_scripts
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.label_batch import candidate_id, label_candidates

    latencies = [(measured.get(candidate_id(record["name"], t)), t) for _src, t in label_candidates(record)]
    timed = sorted((lat, t) for lat, t in latencies if lat is not None)
    parents = [t for _lat, t in timed[:top]]
    if not parents:
        return 0
    have = {s["text"] for s in record["scripts"]}
    mod = load_workload(record["workload"])
    rng = random.Random(f"{seed}:{record['name']}")
    workload_file = f"{record['name']}.tvmscript"
    added = 0
    for parent in parents:
        traces = mutated_traces(to_trace_json(parent), rng, per_parent)
        for text, statements in checked_scripts(traces, mod, target, workload_file, record["target"], Counter()):
            if text not in have:
                have.add(text)
                record["scripts"].append({"space": "mutation", "text": text, "statements": statements})
                added += 1
    return added


def main(argv=None) -> int:
    import argparse
    import sys

    from dragon_dsl.language.files import write_json
    from dragon_dsl.tvm.target import tune_target
    from dragon_model.records import read_measured

    ap = argparse.ArgumentParser(prog="python -m dragon_model.mutation", description=__doc__.split("\n\n")[0])
    ap.add_argument("pretrain", nargs="+", help="pretraining run folders (with records/)")
    ap.add_argument("--measured", action="append", required=True, help="`dragon measure` results (repeatable)")
    ap.add_argument("--top", type=int, default=2, help="the fastest measured scripts of a task to mutate (default 2)")
    ap.add_argument("--per-parent", type=int, default=4, help="mutants tried per parent (default 4)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="stop after this many records")
    args = ap.parse_args(argv)
    for path in [*args.pretrain, *args.measured]:
        if not Path(path).exists():
            print(f"error: {path}: no such file or folder", file=sys.stderr)
            return 2
    measured = read_measured(args.measured)
    targets: dict = {}
    totals = {"records": 0, "mutants": 0}
    files = sorted(p for d in args.pretrain for p in (Path(d) / "records").glob("*.json"))
    for path in files[: args.limit]:
        record = json.loads(path.read_text(encoding="utf-8"))
        header = record["target"]
        key = json.dumps(header, sort_keys=True)
        if key not in targets:
            targets[key] = tune_target(header)
        added = mutate_record(record, measured, args.top, args.per_parent, args.seed, targets[key])
        if added:
            write_json(path, record)
        totals["records"] += 1
        totals["mutants"] += added
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
