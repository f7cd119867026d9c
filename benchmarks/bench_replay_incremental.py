"""The decoder's replay after every statement (`replay_state.replay_prefix`), the old way against
this tree's, in one run (CPU only; prints figures, not a timed test).

    python benchmarks/bench_replay_incremental.py [--base dd9e673] [--rounds 3]

Every prefix of real decoded answers is judged in the decoder's order, the statements it refused
included (tests/data/replay_prefix/answers.jsonl: gen3 CUDA answers of 69, 34, 43 and 12
statements, one llvm answer). Three ways, each in its own process (TVM imported and the tensor
intrinsics registered before the clock starts), rounds interleaved, the fastest round kept:
  * base: the code of revision BASE (`git archive`), every prefix replayed and read afresh;
  * this tree, nothing remembered: `_ACCEPTED` cleared before every prefix;
  * this tree as the decoder runs it.
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
ANSWERS = ROOT / "tests" / "data" / "replay_prefix" / "answers.jsonl"


def candidates(answer: dict) -> list:
    """The script bodies the decoder judged writing ANSWER, in its order (refused ones included)."""
    from dragon_model.generate import statements_of

    refused: dict = {}
    for r in answer["refused"]:
        refused.setdefault(r["after"], []).append(r["statement"])
    done, out = "", [""]
    for stmt in statements_of(answer["body"]):
        out += [done + bad for bad in refused.get(done, [])]
        done += stmt
        out.append(done)
    return out


def worker(jobs_file: Path, forget: bool) -> None:
    """One round in this process: seconds of judging every candidate of JOBS_FILE, printed as JSON."""
    import tvm.s_tir.tensor_intrin  # noqa: F401 - registered once, outside the timings

    from dragon_dsl.tvm.workload import load_workload
    from dragon_model import replay_state

    jobs = [(load_workload(Path(path)), kind, bodies) for path, kind, bodies in json.loads(jobs_file.read_text())]
    remembered = getattr(replay_state, "_ACCEPTED", None)
    replay_state.replay_prefix("", jobs[0][0], jobs[0][1])  # warm-up: lazy imports
    seconds, count = 0.0, 0
    for mod, kind, bodies in jobs:
        for body in bodies:
            if forget and remembered is not None:
                remembered.clear()
            t0 = time.perf_counter()
            replay_state.replay_prefix(body, mod, kind)
            seconds += time.perf_counter() - t0
            count += 1
    print(json.dumps({"seconds": seconds, "prefixes": count}))


def run_round(jobs_file: Path, tree: Path, forget: bool) -> dict:
    """One worker round on the code of TREE (its `model/` imported as dragon_model)."""
    with tempfile.TemporaryDirectory() as links:
        os.symlink(tree / "model", Path(links) / "dragon_model")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([links, str(tree)])}
        args = [sys.executable, str(Path(__file__).resolve()), "--worker", str(jobs_file)] + (
            ["--forget"] if forget else []
        )
        out = subprocess.run(args, env=env, cwd=tree, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--base", default="dd9e673", help="the revision of the old way (default: before incremental replay)"
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--forget", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.worker, a.forget)
        return 0
    answers = [json.loads(line) for line in ANSWERS.read_text().splitlines()]
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, base = Path(tmp) / "jobs.json", Path(tmp) / "base"
        jobs_file.write_text(
            json.dumps([(str(ANSWERS.parent / a["workload"]), a["target"], candidates(a)) for a in answers])
        )
        base.mkdir()
        archive = subprocess.run(["git", "archive", a.base], cwd=ROOT, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        ways = {
            f"base {a.base}": (base, False),
            "this tree, nothing remembered": (ROOT, True),
            "this tree (decoder)": (ROOT, False),
        }
        best: dict = {}
        for r in range(a.rounds):
            for name in list(ways) if r % 2 == 0 else list(reversed(ways)):
                got = run_round(jobs_file, *ways[name])
                best[name] = min(best.get(name, got), got, key=lambda x: x["seconds"])
    count = next(iter(best.values()))["prefixes"]
    print(f"{count} prefixes of {len(answers)} decoded answers, best of {a.rounds} rounds")
    for name, got in best.items():
        print(f"  {name:32s} {got['seconds']:6.2f} s  {1000 * got['seconds'] / count:6.1f} ms per prefix")
    old, new = best[f"base {a.base}"]["seconds"], best["this tree (decoder)"]["seconds"]
    print(f"replay speed-up (base / this tree): {old / new:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
