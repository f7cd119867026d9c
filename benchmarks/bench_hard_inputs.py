"""Benchmark: dragon-check on large and hostile files, against a baseline measured in the same run.

    nice python benchmarks/bench_hard_inputs.py [--baseline COMMIT] [--cap SECONDS] [--parallel N]

Prints figures; it is not a timed test. Each measurement runs `dragon-check --level types`
in a fresh subprocess (wall time, and peak RSS from resource.getrusage in that process),
once with this checkout's code and once with the baseline's (a `git worktree` of COMMIT,
default 4772f13, put first on PYTHONPATH). A baseline run past the cap is killed and shown as
"> CAP s"; a larger file of the same kind is then not tried.

Files (made here, deterministic):
  valid N MB   a realistic schedule repeated over many blocks (benchmarks/bench_language.py)
  random N MB  mutants of real scripts (tests/fuzzing.py) one after another: syntax errors,
               undefined and duplicate names, hostile pieces (deep nesting, long literals...)
  slips N MB   the same without hostile pieces: the slips of a person editing (the baseline
               crashes on some hostile pieces, so this is where its time can be compared)
  string 2 MB  one annotate() whose value is a 2 MB string literal

Goals (issue "First contact and hard inputs"): linear scaling (time per MB about the same
at 1 and 5 MB), a random 5 MB file in under 10 s and 500 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

MB = 1_000_000

# Runs in the measured subprocess: dragon-check's own main(), then one JSON line with the figures.
RUNNER = r"""
import json, os, resource, sys, time
t0 = time.perf_counter()
import dragon_dsl
from dragon_dsl.cli.check import main
t1 = time.perf_counter()
code = main(sys.argv[2:])
t2 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
with open(sys.argv[1], "w") as f:
    json.dump({"code": code, "import_s": t1 - t0, "check_s": t2 - t1, "rss_mb": rss,
               "dragon_dsl": os.path.dirname(dragon_dsl.__file__)}, f)
"""


def valid_text(size: int) -> str:
    """No errors; one warning per block (an unused lookup), so text output renders thousands."""
    import re

    from bench_language import synthetic_script

    n = 1000
    text = synthetic_script(n)
    while len(text.encode()) < size:
        n = int(n * size / len(text.encode())) + 10
        text = synthetic_script(n)
    text = re.sub(r'^(blk(\d+) = get_sblock\("C\d+"\)\n)', r'\1spare\2 = get_sblock("C\2")\n', text, flags=re.M)
    cut = text.rfind("\n", 0, size)  # whole statements, about `size` bytes
    return text[: cut + 1]


def random_text(size: int, hostile: bool = True) -> str:
    import fuzzing

    parts, total, i = [], 0, 0
    while total < size:
        m = fuzzing.mutant(i, hostile)
        i += 1
        if not fuzzing.file_safe(m):
            continue
        parts.append(m if m.endswith("\n") else m + "\n")
        total += len(parts[-1].encode())
    return "".join(parts)[:size]


def string_text(size: int) -> str:
    return 'b0 = get_sblock("C")\nannotate(b0, "k", "' + "x" * size + '")\n'


def _pythonpath(code_root: Path, shim: Path) -> str:
    """code_root first, and dragon_grammar (grammar/ in the repository) from the same tree."""
    shim.mkdir(parents=True, exist_ok=True)
    link = shim / "dragon_grammar"
    if not link.exists():
        link.symlink_to(code_root / "grammar")
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]  # third-party packages, if any
    return os.pathsep.join([str(code_root), str(shim)] + rest)


def measure(code_root: Path, shim: Path, path: Path, fmt: str, cap: float) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".json", delete=False) as out:
        result_path = out.name
    env = dict(os.environ, PYTHONPATH=_pythonpath(code_root, shim))
    cmd = [sys.executable, "-c", RUNNER, result_path, "--level", "types", "--format", fmt, str(path)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=cap, cwd=tempfile.gettempdir()
        )
    except subprocess.TimeoutExpired:
        return {"timeout": True, "wall_s": cap}
    wall = time.perf_counter() - start
    try:
        with open(result_path) as f:
            figures = json.load(f)
    except (OSError, ValueError):
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        return {"failed": True, "wall_s": wall, "error": tail[0][:120]}
    finally:
        os.unlink(result_path)
    figures["wall_s"] = wall
    if b"Traceback" in proc.stderr:
        figures["traceback"] = proc.stderr.decode(errors="replace").strip().splitlines()[-1][:120]
    return figures


def fmt_time(r: dict, cap: float) -> str:
    if r is None:
        return "-"
    if r.get("timeout"):
        return f"> {cap:.0f} s"
    if r.get("skipped"):
        return f"> {cap:.0f} s*"
    if r.get("failed"):
        return "crashed"
    tb = " (traceback)" if r.get("traceback") else ""
    return f"{r['check_s']:.2f} s{tb}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="4772f13")
    ap.add_argument("--cap", type=float, default=120.0, help="seconds before a run is killed (default 120)")
    ap.add_argument(
        "--baseline-root",
        type=Path,
        help="a tree of the baseline's dragon_dsl/ and grammar/ "
        "(e.g. from `git archive COMMIT dragon_dsl grammar`) instead of a git worktree",
    )
    ap.add_argument(
        "--parallel", type=int, default=1, help="measurements at a time (only on a machine with that many idle cores)"
    )
    args = ap.parse_args(argv)

    base_root = args.baseline_root or Path(tempfile.gettempdir()) / f"dragon-baseline-{args.baseline}"
    if not base_root.exists():
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_root), args.baseline],
            check=True,
            capture_output=True,
        )
    shims = {"now": Path(tempfile.mkdtemp(prefix="dragon-now-")), "base": Path(tempfile.mkdtemp(prefix="dragon-base-"))}
    roots = {"now": ROOT, "base": base_root}

    work = Path(tempfile.mkdtemp(prefix="dragon-hard-"))
    files = {
        "valid 1 MB": valid_text(1 * MB),
        "valid 5 MB": valid_text(5 * MB),
        "random 1 MB": random_text(1 * MB),
        "random 5 MB": random_text(5 * MB),
        "slips 1 MB": random_text(1 * MB, hostile=False),
        "slips 5 MB": random_text(5 * MB, hostile=False),
        "string 2 MB": string_text(2 * MB),
        "empty": "",
    }
    paths = {}
    for name, text in files.items():
        p = work / (name.replace(" ", "_") + ".dragon")
        p.write_text(text, encoding="utf-8")
        paths[name] = p
    plan = [
        ("valid 1 MB", "text"),
        ("valid 1 MB", "json"),
        ("valid 5 MB", "text"),
        ("valid 5 MB", "json"),
        ("random 1 MB", "text"),
        ("random 1 MB", "json"),
        ("random 5 MB", "text"),
        ("random 5 MB", "json"),
        ("slips 1 MB", "text"),
        ("slips 1 MB", "json"),
        ("slips 5 MB", "text"),
        ("slips 5 MB", "json"),
        ("string 2 MB", "text"),
        ("empty", "text"),
    ]
    print(
        f"# dragon-check --level types: this checkout vs {args.baseline} (cap {args.cap:.0f} s), "
        f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}; times are dragon-check's own (after imports)"
    )
    print("# files: " + ", ".join(f"{n} = {len(files[n].encode()):,} bytes" for n in files))
    results: dict = {}
    jobs = [(name, fmt, who) for name, fmt in plan for who in ("base", "now")]
    if args.parallel > 1:  # one process per measurement, on idle cores: the runs do not share a core
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            done = pool.map(lambda j: measure(roots[j[2]], shims[j[2]], paths[j[0]], j[1], args.cap), jobs)
            results = dict(zip(jobs, done))
    for name, fmt in plan:
        for who in ("base", "now"):
            if (name, fmt, who) in results:
                continue
            smaller = name.replace("5 MB", "1 MB")
            if who == "base" and smaller != name and results.get((smaller, fmt, who), {}).get("timeout"):
                results[(name, fmt, who)] = {"skipped": True}
                continue
            results[(name, fmt, who)] = measure(roots[who], shims[who], paths[name], fmt, args.cap)
        b, n = results[(name, fmt, "base")], results[(name, fmt, "now")]
        ratio = ""
        if "check_s" in n and "check_s" in b:
            ratio = f"{b['check_s'] / max(n['check_s'], 1e-6):.1f}x faster"
        elif "check_s" in n and (b.get("timeout") or b.get("skipped")):
            ratio = f"> {args.cap / max(n['check_s'], 1e-6):.0f}x faster"
        rss = f"RSS {b.get('rss_mb', float('nan')):.0f} -> {n.get('rss_mb', float('nan')):.0f} MB"
        print(
            f"{name:<12} {fmt:<5} baseline {fmt_time(b, args.cap):>14}   now {fmt_time(n, args.cap):>10}   "
            f"{ratio:<16} {rss}"
        )
        for who, r in (("baseline", b), ("now", n)):
            if r.get("failed") or r.get("traceback"):
                print(f"  {who}: {r.get('error') or r.get('traceback')}")
        sys.stdout.flush()

    def per_mb(name, fmt):
        r = results[(name, fmt, "now")]
        return r["check_s"] / (len(files[name].encode()) / MB) if "check_s" in r else float("nan")

    print()
    print("# linear scaling (now): seconds per MB at 1 MB and at 5 MB")
    for kind in ("valid", "random", "slips"):
        for fmt in ("text", "json"):
            a, b = per_mb(f"{kind} 1 MB", fmt), per_mb(f"{kind} 5 MB", fmt)
            print(f"{kind:<7} {fmt:<5} {a:.2f} s/MB at 1 MB, {b:.2f} s/MB at 5 MB (ratio {b / a:.2f}; goal about 1)")
    r5 = [results[(k, f, "now")] for k in ("random 5 MB", "slips 5 MB") for f in ("text", "json")]
    worst_t = max(r.get("wall_s", float("inf")) for r in r5)
    worst_m = max(r.get("rss_mb", float("inf")) for r in r5)
    print(
        f"# goal: random (and slips) 5 MB under 10 s and 500 MB, worst of text and json: {worst_t:.1f} s wall (with start-up), {worst_m:.0f} MB peak "
        f"-> {'met' if worst_t < 10 and worst_m < 500 else 'NOT met'}"
    )
    s_now, s_base = results[("string 2 MB", "text", "now")], results[("string 2 MB", "text", "base")]
    e_now = results[("empty", "text", "now")]
    print(
        f"# 2 MB string literal: peak RSS {s_base.get('rss_mb', float('nan')):.0f} MB -> "
        f"{s_now.get('rss_mb', float('nan')):.0f} MB (an empty file: {e_now.get('rss_mb', float('nan')):.0f} MB)"
    )
    tracebacks = [k for k, r in results.items() if r.get("traceback") and k[2] == "now"]
    print(f"# tracebacks now: {len(tracebacks)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
