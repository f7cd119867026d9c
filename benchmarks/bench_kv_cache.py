"""Benchmark of the decoder's appending KV cache against transformers' concatenating one (prints figures;
not a timed test).

    python benchmarks/bench_kv_cache.py --model DIR --target cuda WORKLOAD.tvmscript [...] [--rounds 2]

Each workload's greedy answer is written with both caches in the same process, the rounds
interleaved (concatenating, appending, concatenating, ...), so that a machine's load falls on both
alike. Prints the seconds of each, their ratio, and whether both wrote the same script (they must:
the appending layers hand the model the same keys and values).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workloads", nargs="+")
    p.add_argument("--model", required=True)
    p.add_argument("--target", default="cuda")
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    from dragon_model import generate as G

    appending = G._growing
    gen = G.Generator.from_path(args.model)
    table = Table("workload", "statements", "concatenating s", "appending s", "ratio", "same script")
    ratios, same_all = [], True
    for wl in args.workloads:
        secs: dict = {"concat": [], "append": []}
        bodies: dict = {}
        for _ in range(args.rounds):
            for name, grow in (("concat", lambda cache: cache), ("append", appending)):
                G._growing = grow
                t0 = time.perf_counter()
                out = gen.generate(wl, args.target)
                secs[name].append(time.perf_counter() - t0)
                bodies.setdefault(name, out)
        G._growing = appending
        c, a = statistics.median(secs["concat"]), statistics.median(secs["append"])
        same = bodies["concat"].body == bodies["append"].body
        same_all &= same
        ratios.append(c / a)
        table.add_row(
            Path(wl).stem[:48],
            str(bodies["append"].statements),
            f"{c:.1f}",
            f"{a:.1f}",
            f"{c / a:.2f}x",
            "yes" if same else "NO",
        )
    Console().print(table)
    print(f"median ratio {statistics.median(ratios):.2f}x over {len(ratios)} workload(s); same scripts: {same_all}")
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
