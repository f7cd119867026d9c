"""How much the names of a workload's blocks steer the schedule model (prints a table; not a test).

    python benchmarks/probe_block_names.py --model model/weights/llvm [--model OTHER] \
        [--family rms_norm] [--rename sumsq=mean] [--rename sumsq=var] [--random 2]

For every held-out construction prompt of FAMILY in the llvm corpus, the model's first (greedy)
answer is generated for the workload as written and for copies whose intermediate blocks and
buffers are renamed: each `--rename OLD=NEW` (a word-for-word rename of the TVMScript), and
`--random N` copies with every such name replaced by a random one. The program is the same in every
copy, so a schedule model that reads structure writes the same kind of schedule for each. Printed
for each model and copy: how many answers use `rfactor`, `compute_at`, multi-level tiling (the
`tiling_structure` annotation) and `cache_write`, and how many statements they have (median).
Nothing is built or run: only generation.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LLVM = '{"kind": "llvm", "num-cores": 2}'
MARKS = {
    "rfactor": "rfactor(",
    "compute_at": "compute_at(",
    "multi-level tiling": "tiling_structure",
    "cache_write": "cache_write(",
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", required=True, help="a model folder (repeat for several)")
    p.add_argument("--corpus", default=str(ROOT / "data" / "corpus" / "llvm"))
    p.add_argument("--family", default="rms_norm")
    p.add_argument("--rename", action="append", default=[], metavar="OLD=NEW")
    p.add_argument("--random", type=int, default=1, help="copies with random names (default 1)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    from dragon_model.data import intermediate_names, load_rows, random_names, renamed_words
    from dragon_model.generate import Generator

    rows = [
        r for r in load_rows(args.corpus, splits=["test_family"], tasks=["construction"]) if r["family"] == args.family
    ]
    if not rows:
        p.error(f"no held-out construction prompt of family {args.family!r} in {args.corpus}")
    rng = random.Random(args.seed)
    copies = {"as written": [{} for _ in rows]}
    for spec in args.rename:
        old, sep, new = spec.partition("=")
        if not sep or not old or not new:
            p.error(f"--rename {spec!r}: expected OLD=NEW")
        copies[f"{old} -> {new}"] = [{old: new} for _ in rows]
    for i in range(args.random):
        copies[f"random names {i + 1}"] = [random_names(intermediate_names(r["workload_text"]), rng) for r in rows]

    print(f"{len(rows)} held-out {args.family} construction prompts; answers using each instruction")
    header = ["model", "workload copy", *MARKS, "statements (median)"]
    print(" | ".join(header))
    for model in args.model:
        gen = Generator.from_path(model)
        for name, mappings in copies.items():
            counts = dict.fromkeys(MARKS, 0)
            sizes = []
            for row, mapping in zip(rows, mappings):
                body = gen.generate(renamed_words(row["workload_text"], mapping), LLVM).body
                for mark, needle in MARKS.items():
                    counts[mark] += needle in body
                sizes.append(sum(1 for line in body.split("postproc:")[0].splitlines() if line.strip()))
            print(
                " | ".join([model, name, *(str(counts[m]) for m in MARKS), f"{statistics.median(sizes):g}"]), flush=True
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
