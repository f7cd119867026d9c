"""The completions of an evaluation report's shown GPU answers, done again with and without
AutoInline before AutoBind (`dragon_dsl.tvm.autobind.bind_host_blocks(inline=...)`), on the CPU:
how many kernels each schedule launches, and whether the compile and launch checks pass. A
CPU-side projection until the GPU measures the new completions.

An answer's completion is its AutoBind tail: the statements from the last `get_sblock("root")`
after which only AutoBind's kinds of statement follow (get_child_blocks, get_loops, fuse, split,
reorder, bind, sample_categorical), where the model's statements before it leave blocks on the
host. The model can write such statements itself; where it did, they count as completion here.

    python benchmarks/cpu_inline_completion.py REPORT/results.json [...] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TAIL = re.compile(
    r'^(\w+(, \w+)* = )?(get_sblock\("root"\)|(get_child_blocks|get_loops|fuse|split|reorder|bind'
    r"|sample_categorical)\()"
)


def model_part(script: str):
    """SCRIPT's statements before its AutoBind tail, or None when it has none."""
    lines = script.splitlines(keepends=True)
    k = len(lines)
    while k > 0 and TAIL.match(lines[k - 1]):
        k -= 1
    starts = [i for i in range(k, len(lines)) if lines[i].rstrip().endswith('get_sblock("root")')]
    return "".join(lines[: starts[0]]) if starts else None


def judge(prefix: str, workload_text: str, target: str) -> dict:
    from dragon_dsl import to_trace_json
    from dragon_dsl.tvm.autobind import bind_host_blocks
    from dragon_dsl.tvm.compile import compile_problem, host_blocks, kernel_shapes, launch_problem
    from dragon_dsl.tvm.trace import apply
    from dragon_dsl.tvm.workload import load_workload

    trace = to_trace_json(prefix)
    if not host_blocks(apply(trace, load_workload(workload_text)).mod):
        return {}
    out = {}
    for name, inline in (("bound", False), ("inlined", True)):
        done = bind_host_blocks(trace, workload_text, target, inline=inline)
        if done is None:
            out[name] = None
            continue
        out[name] = {
            "kernels": len(kernel_shapes(apply(done, load_workload(workload_text)).mod)),
            "compile": compile_problem(done, workload_text, target),
            "launch": launch_problem(done, workload_text),
        }
    return out


def main(argv=None) -> int:
    from rich.console import Console
    from rich.table import Table

    from dragon_dsl.eval.discover import rebuilt_workload

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("reports", nargs="+", type=Path, help="results.json files of GPU evaluations")
    p.add_argument("--out", type=Path, help="write every answer's verdicts here (JSON)")
    args = p.parse_args(argv)
    rows, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.reports:
            report = json.loads(path.read_text(encoding="utf-8"))
            target = json.loads(report["target"]) if report["target"].startswith('"') else report["target"]
            workloads = {w["name"]: w for w in report["workloads"]}
            for m in report["measurements"]:
                if not m["method"].startswith("model"):
                    continue
                for c in m.get("candidates") or []:
                    script = c.get("script")
                    if not script or (m["workload"], script) in seen:
                        continue
                    seen.add((m["workload"], script))
                    prefix = model_part(script)
                    if prefix is None:
                        continue
                    text = rebuilt_workload(workloads[m["workload"]], Path(tmp)).read_text(encoding="utf-8")
                    verdict = judge(prefix, text, target)
                    if verdict:
                        rows.append(
                            {
                                "report": str(path),
                                "workload": m["workload"],
                                "task": m["task"],
                                "latency_us": c.get("latency_us"),
                                **verdict,
                            }
                        )
    ok = [r for r in rows if r["bound"] and r["inlined"]]
    table = Table(title=f"AutoBind completions of {len(rows)} distinct shown answers, with and without AutoInline")
    for col in ("", "bound only", "inlined, then bound"):
        table.add_column(col)
    table.add_row(
        "kernels in all", str(sum(r["bound"]["kernels"] for r in ok)), str(sum(r["inlined"]["kernels"] for r in ok))
    )
    table.add_row(
        "answers with fewer kernels", "", str(sum(r["inlined"]["kernels"] < r["bound"]["kernels"] for r in ok))
    )
    table.add_row(
        "answers with more kernels", "", str(sum(r["inlined"]["kernels"] > r["bound"]["kernels"] for r in ok))
    )
    for key, label in (("compile", "compile check fails"), ("launch", "launch check flags")):
        table.add_row(label, str(sum(bool(r["bound"][key]) for r in ok)), str(sum(bool(r["inlined"][key]) for r in ok)))
    Console().print(table)
    for r in ok:
        if r["inlined"]["compile"] and not r["bound"]["compile"]:
            print(f"inlining does not compile: {r['workload']} ({r['task']}): {r['inlined']['compile'][:160]}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
