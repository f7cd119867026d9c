"""Benchmark of the language core (prints figures; not a timed test).

    python benchmarks/bench_language.py

1. parse + check + encode of a 1,000-instruction script (goal: under 50 ms on one core);
2. decode + encode throughput over the real traces in tests/data/traces, against
   a baseline measured in the same run: json.dumps + json.loads of the same traces.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dragon_dsl  # noqa: E402
from dragon_dsl.language.check import check  # noqa: E402
from dragon_dsl.language.codec.encode import encode  # noqa: E402
from dragon_dsl.language.syntax.parser import parse  # noqa: E402


def synthetic_script(n_instructions: int = 1000) -> str:
    """A realistic GPU-style schedule repeated over many blocks, n instructions long."""
    lines = ['workload "bench.tvmscript"', 'target "nvidia/nvidia-h100"', ""]
    k = 0
    while len(lines) - 3 < n_instructions:
        b = f"blk{k}"
        lines += [
            f'{b} = get_sblock("C{k}")',
            f"i{k}, j{k}, r{k} = get_loops({b})",
            f"ti{k}_0, ti{k}_1, ti{k}_2 = sample_perfect_tile(i{k}, n=3, max_innermost_factor=64, decision=[4, 8, 32])",
            f"io{k}, im{k}, ii{k} = split(i{k}, [ti{k}_0, ti{k}_1, ti{k}_2])",
            f"tj{k}_0, tj{k}_1, tj{k}_2 = sample_perfect_tile(j{k}, n=3, max_innermost_factor=64, decision=[8, 16, 8])",
            f"jo{k}, jm{k}, ji{k} = split(j{k}, [tj{k}_0, tj{k}_1, tj{k}_2])",
            f"reorder(io{k}, jo{k}, im{k}, jm{k}, r{k}, ii{k}, ji{k})",
            f"bx{k} = fuse(io{k}, jo{k})",
            f'bind(bx{k}, "blockIdx.x")',
            f"tx{k} = fuse(im{k}, jm{k})",
            f'bind(tx{k}, "threadIdx.x")',
            f'sh{k} = cache_read({b}, 0, "shared", consumer_blocks=[{b}])',
            f"compute_at(sh{k}, r{k}, preserve_unit_loops=True)",
            f'lw{k} = cache_write({b}, 0, "local")',
            f"reverse_compute_at(lw{k}, tx{k}, preserve_unit_loops=True)",
            f"u{k} = sample_categorical([0, 16, 64, 512], [0.25, 0.25, 0.25, 0.25], decision=2)",
            f'annotate({b}, "meta_schedule.unroll_explicit", u{k})',
            f"vectorize(ji{k})",
            f"transform_layout({b}, read(0), lambda a, c: (a // 16, c // 16, a % 16, c % 16))",
        ]
        k += 1
    return "\n".join(lines[: n_instructions + 3]) + "\n"


def best_of(fn, repeat: int = 15):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def load_traces():
    out = []
    for path in sorted((ROOT / "tests" / "data" / "traces").glob("*.jsonl*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            out += [json.loads(line)["trace"] for line in f if line.strip()]
    return out


def main() -> int:
    text = synthetic_script(1000)
    dragon_dsl.to_trace_json(text)  # warm the parser (grammar compilation is cached per process)
    n = len(dragon_dsl.to_program(text).instructions)
    p_best, p_med = best_of(lambda: parse(text))
    script, _ = parse(text)
    c_best, c_med = best_of(lambda: check(script))
    program, _ = check(script)
    e_best, e_med = best_of(lambda: encode(program))
    t_best, t_med = best_of(lambda: dragon_dsl.to_trace_json(text))
    print(f"script: {n} instructions, {len(text):,} characters")
    print(f"  parse   best {p_best * 1e3:7.2f} ms  median {p_med * 1e3:7.2f} ms")
    print(f"  check   best {c_best * 1e3:7.2f} ms  median {c_med * 1e3:7.2f} ms")
    print(f"  encode  best {e_best * 1e3:7.2f} ms  median {e_med * 1e3:7.2f} ms")
    print(
        f"  total   best {t_best * 1e3:7.2f} ms  median {t_med * 1e3:7.2f} ms  "
        f"(goal 50 ms: {t_med / 0.050:.2f}x of the goal)"
    )

    traces = load_traces()
    if not traces:
        print("no traces under tests/data/traces")
        return 0
    n_inst = sum(len(t[0]) for t in traces)

    def codec():
        for t in traces:
            dragon_dsl.to_trace_json(dragon_dsl.from_trace_json(t))

    def baseline():
        for t in traces:
            json.loads(json.dumps(t))

    d_best, d_med = best_of(codec, repeat=3)
    b_best, b_med = best_of(baseline, repeat=3)
    print(f"real traces: {len(traces)} traces, {n_inst:,} instructions")
    print(f"  decode + encode      {len(traces) / d_med:8.1f} traces/s  ({n_inst / d_med:,.0f} instructions/s)")
    print(
        f"  baseline json round  {len(traces) / b_med:8.1f} traces/s  (codec is {d_med / b_med:.1f}x the cost of json alone)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
