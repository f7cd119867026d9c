"""Benchmark of the command-line tools (prints figures; not a timed test).

    python benchmarks/bench_cli.py [--files 1000]

1. dragon-fmt --check and dragon-check --level types over N .dragon files made from
   the real fixture traces (files per second), against a baseline measured in the
   same run: reading the same files (the I/O floor);
2. the warm per-script latency of --level replay (TVM already imported).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import dragon_dsl  # noqa: E402
from dragon_dsl.cli import check as check_cli  # noqa: E402
from dragon_dsl.cli import fmt as fmt_cli  # noqa: E402
from dragon_dsl.levels import check_text_at_level  # noqa: E402


def make_files(folder: Path, n: int) -> list[Path]:
    from tracetools import fixture_lines

    lines = [r for r in fixture_lines() if r["source"] != "handwritten"]
    paths = []
    for i in range(n):
        rec = lines[i % len(lines)]
        wl = ROOT / "tests" / "data" / "workloads" / f"{rec['workload']}.tvmscript"
        text = dragon_dsl.from_trace_json(rec["trace"], workload=str(wl), target=rec["target"])
        p = folder / f"s{i:04d}.dragon"
        p.write_text(text, encoding="utf-8")
        paths.append(p)
    return paths


def timed(fn):
    sink = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        rc = fn()
    return time.perf_counter() - t0, rc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--replays", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = make_files(folder, args.files)
        n = len(paths)
        size = sum(p.stat().st_size for p in paths)
        base, _ = timed(lambda: [p.read_text(encoding="utf-8") for p in paths])
        t_fmt, rc_fmt = timed(lambda: fmt_cli.main(["--check", "-q", str(folder)]))
        t_types, rc_types = timed(lambda: check_cli.main([str(folder), "--level", "types", "--format", "json"]))
        t_types2, _ = timed(
            lambda: check_cli.main([str(folder), "--level", "types", "--format", "json", "--workers", "2"])
        )
        print(f"{n} files, {size / 1e6:.1f} MB (real MetaSchedule traces, avg {size / n / 1e3:.1f} kB)")
        print(f"  baseline: read the files      {n / base:9.0f} files/s")
        print(
            f"  dragon-fmt --check            {n / t_fmt:9.0f} files/s  ({t_fmt / base:.0f}x the read; exit {rc_fmt})"
        )
        print(
            f"  dragon-check --level types    {n / t_types:9.0f} files/s  ({t_types / base:.0f}x the read; exit {rc_types})"
        )
        print(f"  dragon-check types --workers 2 {n / t_types2:9.0f} files/s")
        # warm replay latency: TVM imported and the workloads parsed once before timing
        samples = paths[: args.replays]
        texts = [p.read_text(encoding="utf-8") for p in samples]
        check_text_at_level(texts[0], str(samples[0]), level="replay")
        lat = []
        for p, t in zip(samples, texts):
            t0 = time.perf_counter()
            rep = check_text_at_level(t, str(p), level="replay")
            lat.append(time.perf_counter() - t0)
            assert rep.errors == 0, rep.diagnostics
        lat.sort()
        print(
            f"  --level replay, warm, per script: median {statistics.median(lat) * 1e3:.1f} ms, "
            f"p90 {lat[int(0.9 * (len(lat) - 1))] * 1e3:.1f} ms over {len(lat)} scripts"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
