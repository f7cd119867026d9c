"""Benchmark of the decoder's two speed-ups of version 18 against version 17's decoding (prints
figures; not a timed test).

    python benchmarks/bench_decoding.py --model DIR --target cuda WORKLOAD.tvmscript [...] [--threads 1]

Each workload's greedy answer is written three ways in the same process, one after the other:
version 17 (the whole statement's grammar, a forward pass per token), the two-phase statement
grammar alone (`decoder_grammar.statement_phases`), and version 18 (two phases, and forced text
read with the token before it: `Generator._forced`). Prints seconds, tokens, forward passes and
statements of each, the ratios to version 17, and whether the scripts are the same (the phases
must write the same one; forced text may change an answer only where a rejected statement was
sampled again, since a sample then draws fewer random numbers).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WAYS = (("v17", False, False), ("phases", True, False), ("v18", True, True))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workloads", nargs="+")
    p.add_argument("--model", required=True)
    p.add_argument("--target", default="cuda")
    p.add_argument("--threads", type=int, default=1, help="torch threads while generating")
    p.add_argument("--json", help="write the rows here too")
    args = p.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from dragon_model.generate import Generator

    gen = Generator.from_path(args.model, cpu_threads=args.threads)
    table = Table(
        "workload",
        "statements",
        "tokens",
        "passes v17 / v18",
        "v17 s",
        "phases s",
        "v18 s",
        "v18 / v17",
        "same script (phases, v18)",
    )
    rows = []
    for wl in args.workloads:
        out = {}
        for name, phases, jump in WAYS:
            gen.phases, gen.jump_forward = phases, jump
            t0 = time.perf_counter()
            g = gen.generate(wl, args.target)
            out[name] = {
                "seconds": time.perf_counter() - t0,
                "tokens": g.tokens,
                "passes": g.forward_passes,
                "statements": g.statements,
                "rejected": g.rejected,
                "stop": g.stop,
                "body": g.body,
            }
        same = (out["phases"]["body"] == out["v17"]["body"], out["v18"]["body"] == out["v17"]["body"])
        ratio = out["v18"]["seconds"] / out["v17"]["seconds"]
        rows.append(
            {
                "workload": Path(wl).stem,
                **{k: {kk: vv for kk, vv in v.items() if kk != "body"} for k, v in out.items()},
                "same_phases": same[0],
                "same_v18": same[1],
                "ratio": ratio,
            }
        )
        table.add_row(
            Path(wl).stem[:48],
            str(out["v17"]["statements"]),
            str(out["v17"]["tokens"]),
            f"{out['v17']['passes']} / {out['v18']['passes']}",
            *(f"{out[n]['seconds']:.1f}" for n, _, _ in WAYS),
            f"{ratio:.2f}x",
            f"{same[0]}, {same[1]}",
        )
    console = Console()
    console.print(table)
    for name, _, _ in WAYS[1:]:
        r = [row[name]["seconds"] / row["v17"]["seconds"] for row in rows]
        console.print(
            f"{name} / v17 seconds: median {statistics.median(r):.2f}, geomean {statistics.geometric_mean(r):.2f}"
        )
    console.print(
        "median seconds a statement: "
        + ", ".join(
            f"{n} {statistics.median(row[n]['seconds'] / max(1, row[n]['statements']) for row in rows):.3f}"
            for n, _, _ in WAYS
        )
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {"model": str(args.model), "target": args.target, "threads": args.threads, "rows": rows}, indent=1
            ),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
