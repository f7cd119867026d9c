"""What a CPU machine can say about the model's CUDA first answers before a GPU measures them.

    dragon eval --workloads WL --target cuda --methods model --k 1 --generate-only --out EVAL
    python benchmarks/cuda_answers_cpu.py EVAL WL [--build]

For every construction answer that `--generate-only` stored under EVAL/model (first answers,
n=1) of the workloads in WL: does it replay from its own text; does TVM's compiler accept it for
the GPU (`compile_problem`: host stages, thread extents, shared memory and the other limits of
the target, CUDA source generation); with --build, does it pass `dragon-check --level build`
(nvcc included); and is the scheduled kernel the one dlight writes (`tvm.ir.structural_equal` of
the two scheduled modules: the same kernel runs at dlight's speed, no measurement needed).
Generation seconds are the stored ones. A per-family table and the totals are printed; --json
writes every answer's row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def answers(eval_dir: Path) -> list:
    out = []
    for p in sorted((eval_dir / "model").glob("*-construction-n1-*.json")):
        data = json.loads(p.read_text(encoding="utf-8"))
        name = p.name.split("-construction-n1-")[0]
        out.append((name, data["scripts"][0] if data["scripts"] else "", data["generation_s"]))
    return out


def row_of(name: str, text: str, gen_s: float, wl_dir: Path, build: bool) -> dict:
    import tvm_ffi

    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.compile import schedule
    from dragon_dsl.tvm.dlight import dlight_trace
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.api import compile_problem, replay_problem

    wl = wl_dir / f"{name}.tvmscript"
    family = json.loads(
        next(ln for ln in (wl_dir / "manifest.jsonl").read_text().splitlines() if json.loads(ln)["name"] == name)
    )["family"]
    row = {
        "workload": name,
        "family": family,
        "generation_s": gen_s,
        "statements": text.count("\n"),
        "replays": False,
        "compiles": False,
        "builds": None,
        "dlight_kernel": False,
        "problem": "",
    }
    if not text:
        row["problem"] = "no answer"
        return row
    problem = replay_problem(text, str(wl))
    row["replays"] = problem is None
    if problem is None:
        problem = compile_problem(text, str(wl), "cuda")
        row["compiles"] = problem is None
    row["problem"] = (problem or "")[:200]
    if row["compiles"] and build:
        import subprocess
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / f"{name}.dragon"
            script.write_text(text, encoding="utf-8")
            done = subprocess.run(
                [
                    str(Path(sys.executable).parent / "dragon-check"),
                    "--level",
                    "build",
                    "--workload",
                    str(wl),
                    "--target",
                    "cuda",
                    str(script),
                ],
                capture_output=True,
                text=True,
            )
        row["builds"] = done.returncode == 0
        if not row["builds"]:
            row["problem"] = (done.stdout + done.stderr)[-300:]
    if row["replays"]:
        mod = load_workload(wl)
        target = tvm_target("cuda")
        found = dlight_trace(mod, target)
        if found is not None:
            mine = schedule(mod, {"trace": to_trace_json(text)}, target)
            theirs = schedule(mod, {"trace": found[1]}, target)
            row["dlight_kernel"] = bool(tvm_ffi.structural_equal(mine, theirs, map_free_vars=True))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("eval_dir", type=Path, help="the --out folder of `dragon eval --generate-only`")
    ap.add_argument("workloads", type=Path, help="the --workloads folder (with manifest.jsonl)")
    ap.add_argument("--build", action="store_true", help="also dragon-check --level build (nvcc)")
    ap.add_argument("--json", type=Path, help="write every answer's row there")
    a = ap.parse_args(argv)
    rows = [row_of(n, t, g, a.workloads, a.build) for n, t, g in answers(a.eval_dir)]
    if not rows:
        print(f"no stored first answers under {a.eval_dir / 'model'}", file=sys.stderr)
        return 1
    fams = defaultdict(list)
    for r in rows:
        fams[r["family"]].append(r)
    cols = ["replays", "compiles"] + (["builds"] if a.build else []) + ["dlight_kernel"]
    print(f"| family | answers | {' | '.join(cols)} | generation s (median) |")
    print("|---|---|" + "---|" * len(cols) + "---|")
    for fam, rs in sorted(fams.items()) + [("all", rows)]:
        counts = " | ".join(str(sum(bool(r[c]) for r in rs)) for c in cols)
        print(f"| {fam} | {len(rs)} | {counts} | {statistics.median(r['generation_s'] for r in rs):.1f} |")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
