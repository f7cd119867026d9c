"""What runs inside a worker process: the TVM side of the server.

Every function takes and returns plain, picklable data. TVM is imported here
(through `dragon_dsl.tvm`), never in the server's process.
"""

from __future__ import annotations

import atexit
import json
from pathlib import Path
from typing import Any, Optional

from dragon_dsl import check_text
from dragon_dsl.diagnostics import has_errors
from dragon_dsl.levels import LEVELS, check_text_at_level, resolve_workload

from dragon_lsp.features.data import ReplayFacts

#: Tasks that take a `progress(message, percentage)` callback.
WITH_PROGRESS = {"suggest"}

NO_WORKLOAD = 'no workload: add `workload "file.tvmscript"` to the header (or set dragon.workload)'


def ping() -> int:
    import os

    return os.getpid()


def replay_facts(text: str, path: Optional[str], workload: Optional[str], version: Optional[int],
                 script: bool = False) -> dict:
    """Replay a script on its workload: diagnostics, what its variables denote and, with
    `script`, the scheduled module as TVMScript (None when the replay failed)."""
    from dragon_dsl.tvm.replay import replay

    program, diags = check_text(text)
    if has_errors(diags):
        return {"skipped": "the script has errors", "diagnostics": [], "facts": None}
    wl = resolve_workload(program, path, workload)
    if wl is None:
        return {"skipped": "no workload", "diagnostics": [], "facts": None}
    result = replay(program, wl)
    facts = ReplayFacts(version)
    if result.schedule is not None:
        try:
            facts = _facts(program, result, wl, version)
        except Exception:  # noqa: BLE001 - facts are extras: the replay's diagnostics still count
            pass
    answer = {"diagnostics": list(result.diagnostics), "facts": facts, "workload": str(wl)}
    if script:
        answer["script"] = result.module.script() if result.ok else None
    return answer


def _facts(program, result, wl, version) -> ReplayFacts:
    """Re-apply the replayed trace on a fresh schedule, reading each instruction's results as it binds them."""
    from tvm import s_tir
    from tvm.s_tir.schedule import ExprRV, LoopRV, SBlockRV

    from dragon_dsl.tvm.trace import trace_json
    from dragon_dsl.tvm.workload import load_workload

    sch = s_tir.Schedule(load_workload(wl), seed=1)
    variables: dict[str, dict] = {}
    seen = [0]

    def record(i: int):
        if i >= len(program.instructions):
            return
        names = program.instructions[i].outputs
        for name, rv in zip(names, sch.trace.insts[i].outputs):
            if name == "_":
                continue
            try:
                node = sch.get(rv)
                if isinstance(rv, LoopRV):
                    variables[name] = {"extent": int(node.extent)}
                elif isinstance(rv, SBlockRV):
                    variables[name] = {"block": str(node.name_hint)}
                elif isinstance(rv, ExprRV):
                    variables[name] = {"value": int(node)}
            except Exception:  # noqa: BLE001 - a symbolic extent or a removed object: no fact
                continue

    def provider(inst, inputs, attrs, decision):
        n = len(sch.trace.insts)
        if n > seen[0]:
            record(n - 1)
            seen[0] = n
        return decision

    result.schedule.trace.apply_to_schedule(sch, remove_postproc=False, decision_provider=provider)
    n = len(sch.trace.insts)
    if n > seen[0]:
        record(n - 1)
    decisions = {int(i): d for i, d in trace_json(result.schedule)[1]}
    return ReplayFacts(version, variables, decisions)


def workload_blocks(path: str) -> list[str]:
    """The block names of a workload's `main`, outermost first (root first)."""
    from tvm import s_tir

    from dragon_dsl.tvm.workload import load_workload

    sch = s_tir.Schedule(load_workload(Path(path)))
    names: list[str] = []
    try:
        stack = [sch.get_sblock("root")]
    except Exception:  # noqa: BLE001 - a function whose root block has another name
        return names
    while stack:
        rv = stack.pop()
        names.append(str(sch.get(rv).name_hint))
        stack.extend(reversed(list(sch.get_child_blocks(rv))))
    return names


def _generate(mod, target) -> Optional[str]:
    """`dragon_dsl.tvm.codegen.cuda_source`, or None when TVM built no CUDA module (no kernel)."""
    from dragon_dsl.tvm.codegen import cuda_source

    try:
        return cuda_source(mod, target)
    except RuntimeError as exc:
        if str(exc) == "no CUDA module was generated":
            return None
        raise


def cuda_source(text: str, path: Optional[str], workload: Optional[str], target: Any) -> dict:
    """The CUDA source TVM generates for the replayed script: {"source"} or {"error"} (no GPU needed)."""
    import tvm

    from dragon_dsl.tvm.replay import replay, tvm_message

    program, diags = check_text(text)
    if has_errors(diags):
        return {"error": "the script has errors"}
    wl = resolve_workload(program, path, workload)
    if wl is None:
        return {"error": NO_WORKLOAD}
    try:
        kind = str(tvm.target.Target(target).kind.name)
    except Exception as exc:  # noqa: BLE001 - TVM raises its own error type for unknown targets
        return {"error": f"target {json.dumps(target)}: {tvm_message(exc)}"}
    if kind != "cuda":
        return {"error": f"target {json.dumps(target)} (kind {kind}) generates no CUDA: set dragon.target "
                         "(or the script's target line) to a CUDA target such as nvidia/nvidia-h100"}
    result = replay(program, wl)
    if not result.ok:
        return {"error": "the replay failed", "diagnostics": list(result.diagnostics)}
    try:
        source = _generate(result.module, target)
    except Exception as exc:  # noqa: BLE001 - a schedule TVM cannot build for the GPU is an answer
        return {"error": f"TVM cannot build this schedule for {json.dumps(target)}: {tvm_message(exc)}"}
    if source is None:
        return {"error": "TVM generated no CUDA kernel: the schedule binds no loop to blockIdx/threadIdx, so "
                         "everything runs on the host (bind loops with bind(loop, \"blockIdx.x\") ...)"}
    return {"source": source}


def target_tags() -> list[str]:
    """Every target tag TVM knows, sorted."""
    import tvm

    return sorted(str(t) for t in tvm.target.tag.list_tags())


# ---- build, verify, time -----------------------------------------------------------------------

_ENGINES: dict = {}


def _close_engines():
    for e in _ENGINES.values():
        try:
            e.close()
        except Exception:  # noqa: BLE001
            pass


atexit.register(_close_engines)


def engine_available() -> Optional[str]:
    """None when `dragon_dsl.engine` can be imported, else why not."""
    try:
        from dragon_dsl.engine import Engine  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - a broken engine is as unavailable as a missing one
        return f"the measurement engine (dragon_dsl.engine) cannot be imported: {exc}"
    return None


def engine_for(device: str, timeout_s: float):
    def make(target):
        from dragon_dsl.engine import Engine

        key = (json.dumps(target, sort_keys=True), device, timeout_s)
        if key not in _ENGINES:
            _ENGINES[key] = Engine(target, device=device, workers=1, timeout_s=timeout_s)
        return _ENGINES[key]

    return make


def check_level(text: str, path: Optional[str], workload: Optional[str], target: Any, level: str, device: str,
                timeout_s: float) -> dict:
    """`dragon-check --level LEVEL` on one script, through the measurement engine for build and above."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}")
    if LEVELS.index(level) >= LEVELS.index("build"):
        why = engine_available()
        if why is not None:
            return {"unavailable": why, "diagnostics": [], "figures": {}, "level_reached": None}
    report = check_text_at_level(text, path or "<script>", level=level, workload=workload, target=target,
                                 engine_for=engine_for(device, timeout_s))
    return {"diagnostics": list(report.diagnostics), "figures": dict(report.figures),
            "level_reached": report.level_reached}


def suggest(*args, progress=None):
    from dragon_lsp.search import suggest as run

    return run(*args, progress=progress)
