"""The renaming test on real networks' held-out tasks: each workload with every buffer, block, loop
and iteration variable renamed at random (`dragon_model.names.renamed_workload`; TVM's structural
equality holds between the two) must get the same first answer as the original, up to the block
names the script looks up.

    python benchmarks/bench_renaming.py WORKLOADS_DIR --model DIR [--target cuda] [--count 50]
        [--json OUT.json]

WORKLOADS_DIR is a workloads folder (`dragon workloads --tasks data/tasks/tasks.jsonl.gz --split
test --count 50 --seed 2027 -o DIR`). Each answer is the model's greedy first answer
(`Generator.generate`, the decoder the product uses); the script prints one line a task (same,
different, or no answer) and the totals, and writes every pair of answers with --json.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path


def _unrenamed(script: str, renames: dict) -> str:
    """SCRIPT with the renamed blocks it looks up given their original names back."""
    blocks = {new: old for (space, old), new in renames.items() if space == "block"}
    return re.sub(r'"([^"]+)"', lambda m: '"' + blocks.get(m.group(1), m.group(1)) + '"', script)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workloads", help="a workloads folder (manifest.jsonl and NAME.tvmscript files)")
    ap.add_argument("--model", required=True, help="the model folder")
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--count", type=int, default=50, help="the first COUNT workloads of the manifest")
    ap.add_argument("--seed", type=int, default=7, help="seed of the random names")
    ap.add_argument("--json", help="write every task's pair of answers here")
    args = ap.parse_args(argv)

    import tvm_ffi

    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.generate import Generator
    from dragon_model.names import renamed_workload

    folder = Path(args.workloads)
    names = [json.loads(line)["name"] for line in (folder / "manifest.jsonl").read_text().splitlines() if line.strip()]
    gen = Generator.from_path(args.model)
    print(f"model {args.model}: canonical names {gen.canonical_names!r}, {len(names[: args.count])} tasks", flush=True)
    rows, start = [], time.time()
    for i, name in enumerate(names[: args.count], 1):
        text = (folder / f"{name}.tvmscript").read_text(encoding="utf-8")
        other, renames = renamed_workload(text, random.Random(args.seed + i))
        equal = bool(tvm_ffi.structural_equal(load_workload(text), load_workload(other)))
        want = gen.generate(text, args.target).body
        got = gen.generate(other, args.target).body
        same = _unrenamed(got, renames) == want
        verdict = "same" if same and want.strip() else "no answer" if not want.strip() else "different"
        rows.append({"name": name, "structurally_equal": equal, "verdict": verdict, "original": want, "renamed": got})
        print(f"[{i}/{len(names[: args.count])}] {verdict:9s} {name} ({time.time() - start:.0f} s)", flush=True)
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("same", "different", "no answer")}
    summary = {
        "model": args.model,
        "canonical_names": gen.canonical_names,
        "tasks": len(rows),
        "structurally_equal": sum(r["structurally_equal"] for r in rows),
        **counts,
        "seconds": round(time.time() - start, 1),
    }
    print(json.dumps(summary))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "tasks": rows}, indent=1), encoding="utf-8")
    return 0 if counts["different"] == 0 and counts["no answer"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
