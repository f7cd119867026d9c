"""The long fuzzing run: 100,000 mutants (tests/fuzzing.py), counts printed; not a test.

    nice python benchmarks/fuzz_100k.py [--scripts 100000] [--traces 20000] [--files 2000] [--jobs N]

Script mutants go through the API (check_text, format_text, to_trace_json: nothing but
DragonError may escape); trace mutants through from_trace_json (and every decoded trace
must encode); a sample of script mutants, written as files, through dragon-fmt --check and
dragon-check --level types in worker processes (exit 0, 1 or 2, never a traceback).
The mutants are those of the CI test (tests/test_fuzz.py) and many more: mutant i is the
same everywhere, so a failure printed here is rebuilt with fuzzing.mutant(i).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import fuzzing  # noqa: E402


def _scripts(rng):
    out = []
    for i in rng:
        e = fuzzing.check(fuzzing.mutant(i))
        if e is not None:
            out.append((i, type(e).__name__, str(e)[:160]))
    return len(rng), out


def _traces(rng):
    out = []
    for i in rng:
        e = fuzzing.check_trace(fuzzing.trace_mutant(i))
        if e is not None:
            out.append((i, type(e).__name__, str(e)[:160]))
    return len(rng), out


def _files(args):
    """Run both tools on each file in process; (file, tool, problem) for exit codes outside 0-2 or a traceback."""
    paths = args
    from dragon_dsl.cli import check, fmt

    out, codes = [], collections.Counter()
    for p in paths:
        for name, main, argv in (
            ("dragon-fmt", fmt.main, ["--check", "-q", p]),
            ("dragon-check", check.main, ["--level", "types", p]),
        ):
            buf_out, buf_err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(buf_out), contextlib.redirect_stderr(buf_err):
                try:
                    code = main(argv)
                except SystemExit as exc:
                    code = exc.code
                except Exception as exc:
                    code = f"{type(exc).__name__}: {str(exc)[:120]}"
            codes[(name, code if code in (0, 1, 2) else "other")] += 1
            if code not in (0, 1, 2) or "Traceback" in buf_err.getvalue():
                out.append((p, name, str(code)))
    return codes, out


def _chunks(start, n, size):
    return [range(a, min(a + size, start + n)) for a in range(start, start + n, size)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scripts", type=int, default=100_000)
    ap.add_argument("--traces", type=int, default=20_000)
    ap.add_argument("--files", type=int, default=2_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    fuzzing.seeds()
    t0 = time.time()
    failures: list = []
    done = collections.Counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for n, bad in pool.map(_scripts, _chunks(0, args.scripts, 500)):
            done["script mutants"] += n
            failures += [("script",) + b for b in bad]
        t1 = time.time()
        for n, bad in pool.map(_traces, _chunks(0, args.traces, 500)):
            done["trace mutants"] += n
            failures += [("trace",) + b for b in bad]
        t2 = time.time()
        work = Path(tempfile.mkdtemp(prefix="dragon-fuzz-"))
        paths, i = [], 2 * 10**6
        while len(paths) < args.files:
            text = fuzzing.mutant(i)
            i += 1
            if fuzzing.file_safe(text):
                p = work / f"m{len(paths):05d}.dragon"
                p.write_text(text, encoding="utf-8", newline="")
                paths.append(str(p))
        codes: collections.Counter = collections.Counter()
        chunk = max(1, len(paths) // (4 * args.jobs))
        for c, bad in pool.map(_files, [paths[a : a + chunk] for a in range(0, len(paths), chunk)]):
            codes.update(c)
            failures += [("file",) + b for b in bad]
        t3 = time.time()
    print(f"# fuzz run: {args.jobs} worker process(es), Python {sys.version.split()[0]}")
    print(
        f"script mutants: {done['script mutants']:,} in {t1 - t0:.0f} s; escaped exceptions: "
        f"{sum(1 for f in failures if f[0] == 'script')}"
    )
    print(
        f"trace mutants:  {done['trace mutants']:,} in {t2 - t1:.0f} s; escaped exceptions: "
        f"{sum(1 for f in failures if f[0] == 'trace')}"
    )
    print(
        f"files through dragon-fmt --check and dragon-check --level types: {len(paths):,} in {t3 - t2:.0f} s; "
        f"tracebacks or other exit codes: {sum(1 for f in failures if f[0] == 'file')}"
    )
    print("exit codes: " + ", ".join(f"{tool} {code}: {n}" for (tool, code), n in sorted(codes.items(), key=str)))
    kinds = collections.Counter((f[0], f[2]) for f in failures)
    for (where, kind), n in kinds.most_common():
        example = next(f for f in failures if f[0] == where and f[2] == kind)
        print(f"  {where} {kind}: {n} (e.g. {example[1]}: {example[-1]})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
