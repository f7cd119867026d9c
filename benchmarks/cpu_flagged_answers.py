"""The shown first answers of an evaluation report that a later check flags, written again by the
current decoder on the CPU: is the new answer still flagged, does it replay and pass the compile
check, is it dlight's very script, or one that leaves a module structurally equal to dlight's (then
its kernel is dlight's, whose latency the report measured), and how many kernels does it launch? A
CPU-side projection until the GPU measures the new answers. The findings:

* `DRG106`: `dragon-check`'s warning for a cache the script made and inlined again;
* `racing_reduction`: the compile check's `RACING_REDUCTION` (a reduction block every thread of its
  kernel runs into the same global or shared elements);
* `slow_launch`: `launch_problem` (a kernel launched from a host loop, or one that keeps few threads
  busy): answers shown only because every sample was rejected.

    python benchmarks/cpu_flagged_answers.py REPORT/results.json --finding DRG106 [--model DIR] [--out F.json]

The model defaults to the shipped one of the report's target (model/weights/cuda). Improvement
tasks start from the report's own starting script (its `existing-script` candidate).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FINDINGS = ("DRG106", "racing_reduction", "slow_launch")


def is_flagged(script: str, workload_text: str, finding: str) -> bool:
    """Whether SCRIPT (a whole script, header included) on the workload has FINDING."""
    from dragon_dsl import check_text

    if finding == "DRG106":
        return "DRG106" in {d.code for d in check_text(script)[1]}
    if finding == "slow_launch":
        from dragon_model.api import launch_problem

        return bool(script.strip()) and launch_problem(script, workload_text) is not None
    from dragon_dsl.tvm.compile import RACING_REDUCTION, thread_binding_problems
    from dragon_model.data import body_of_text

    mod = scheduled(body_of_text(script), workload_text) if script.strip() else None
    return mod is not None and any(kind == RACING_REDUCTION for kind, _ in thread_binding_problems(mod))


def flagged_answers(report: dict, finding: str, folder: Path) -> list:
    """(workload entry, task, answer script, starting script or None, its latency, dlight's latency)
    of each first answer with FINDING (the workloads rebuilt in FOLDER)."""
    from dragon_dsl.eval.discover import rebuilt_workload

    entries = {w["name"]: w for w in report["workloads"]}
    first = {}
    for row in report["measurements"]:
        cands = row.get("candidates") or []
        if cands:
            first[(row["workload"], row["task"], row["method"])] = cands[0]
    out = []
    for (name, task, method), cand in sorted(first.items()):
        script = cand.get("script") or ""
        if method != "model-first" or not script:
            continue
        if not is_flagged(script, rebuilt_workload(entries[name], folder).read_text(encoding="utf-8"), finding):
            continue
        start = first.get((name, task, "existing-script"), {}).get("script") if task == "improvement" else None
        dlight = first.get((name, "construction", "dlight"), {}).get("latency_us")
        out.append((entries[name], task, script, start, cand.get("latency_us"), dlight))
    return out


def scheduled(script_body: str, workload_text: str):
    """The module a script body leaves (None where it does not replay)."""
    from dragon_dsl import check_text
    from dragon_dsl.tvm.replay import replay
    from dragon_dsl.tvm.workload import load_workload

    result = replay(check_text(script_body)[0], load_workload(workload_text))
    return result.schedule.mod if result.ok else None


def kernels(mod) -> int:
    from dragon_dsl.tvm.compile import kernel_shapes

    return len(kernel_shapes(mod))


def main(argv=None) -> int:
    from rich.console import Console
    from rich.table import Table

    from dragon_dsl.engine import resolve_target
    from dragon_dsl.eval.discover import rebuilt_workload
    from dragon_model.api import GENERATION_VERSION, compile_problem, default_model_path, dlight_script, suggest
    from dragon_model.data import body_of_text
    from dragon_model.replay_state import replay_prefix

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="an evaluation's results.json")
    ap.add_argument("--finding", required=True, choices=FINDINGS, help="which answers to write again")
    ap.add_argument("--model", help="model folder (default: the shipped one of the report's target)")
    ap.add_argument("--out", help="also write every row as JSON here")
    args = ap.parse_args(argv)

    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    target = resolve_target(report["target"])
    model = args.model or str(default_model_path(target.spec))
    folder = Path(tempfile.mkdtemp(prefix="flagged-answers-"))
    rows = []
    for entry, task, old, start, old_us, dlight_us in flagged_answers(report, args.finding, folder):
        path = rebuilt_workload(entry, folder)
        text = path.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        new = suggest(workload=str(path), target=target.spec, script=start, n=1, model_path=model)
        seconds = time.perf_counter() - t0
        new_body = body_of_text(new[0]) if new else ""
        from dragon_dsl.tvm.workload import load_workload

        env, why = replay_prefix(new_body, load_workload(text), "cuda") if new_body else (None, "no answer")
        reference = dlight_script(text, target.spec, path.name)
        import tvm_ffi

        mine = scheduled(new_body, text) if new_body else None
        before = scheduled(body_of_text(old), text)
        theirs = scheduled(body_of_text(reference), text) if reference else None
        equal = mine is not None and theirs is not None and bool(tvm_ffi.structural_equal(mine, theirs))
        rows.append(
            {
                "workload": entry["name"],
                "task": task,
                "old_us": old_us,
                "dlight_us": dlight_us,
                "seconds": round(seconds, 1),
                "answered": bool(new_body),
                "replays": env is not None,
                "why": why,
                "flagged": bool(new) and is_flagged(new[0], text, args.finding),
                "compile_problem": compile_problem(new[0], text, target.spec) if new else None,
                "dlights_script": bool(reference) and new_body == body_of_text(reference),
                "dlights_module": equal,
                "kernels": kernels(mine) if mine is not None else None,
                "dlight_kernels": kernels(theirs) if theirs is not None else None,
                "old_kernels": kernels(before) if before is not None else None,
                "statements": len(new_body.splitlines()),
                "old_statements": len(body_of_text(old).splitlines()),
            }
        )

    table = Table(title=f"first answers with {args.finding}, written again (decoder {GENERATION_VERSION})")
    for col in (
        "workload",
        "task",
        "old us",
        "dlight us",
        "new: replays",
        "compiles",
        args.finding,
        "dlight's script",
        "dlight's module",
        "kernels old -> new (dlight)",
        "statements old -> new",
        "s",
    ):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r["workload"][:40],
            r["task"][:5],
            f"{r['old_us']:.0f}" if r["old_us"] else "-",
            f"{r['dlight_us']:.0f}" if r["dlight_us"] else "-",
            str(r["replays"]),
            str(r["answered"] and r["compile_problem"] is None),
            str(r["flagged"]),
            str(r["dlights_script"]),
            str(r["dlights_module"]),
            f"{r['old_kernels']} -> {r['kernels']} ({r['dlight_kernels']})",
            f"{r['old_statements']} -> {r['statements']}",
            str(r["seconds"]),
        )
    Console(width=200).print(table)
    same = sum(r["dlights_script"] for r in rows)
    print(
        f"{len(rows)} flagged answers: {sum(r['replays'] for r in rows)} new answers replay, "
        f"{sum(r['answered'] and r['compile_problem'] is None for r in rows)} pass the compile check, "
        f"{sum(r['flagged'] for r in rows)} still flagged, {same} are dlight's script, "
        f"{sum(r['dlights_module'] for r in rows)} schedule the workload as dlight's does (structurally equal)"
    )
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "report": args.report,
                    "finding": args.finding,
                    "model": model,
                    "generation_version": GENERATION_VERSION,
                    "rows": rows,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
