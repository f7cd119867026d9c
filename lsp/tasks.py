"""What runs inside a worker process: the TVM side of the server.

Every function takes and returns plain, picklable data. TVM work goes through the
TVM bridge (`dragon_dsl.tvm`), imported here, never in the server's process.
"""

from __future__ import annotations

import atexit
import json
from pathlib import Path
from typing import Any

from dragon_dsl import check_text
from dragon_dsl.language.diagnostics import has_errors
from dragon_dsl.levels import LEVELS, check_text_at_level, resolve_workload
from dragon_lsp.features.data import ReplayFacts

#: Tasks that take a `progress(message, percentage)` callback.
WITH_PROGRESS = {"suggest"}

NO_WORKLOAD = 'no workload: add `workload "file.tvmscript"` to the header (or set dragon.workload)'


def ping() -> int:
    import os

    return os.getpid()


def replay_facts(text: str, path: str | None, workload: str | None, version: int | None, script: bool = False) -> dict:
    """Replay a script on its workload: diagnostics, what its variables denote and, with
    `script`, the scheduled module as TVMScript (None when the replay failed)."""
    from dragon_dsl.tvm.inspect import script_variables
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
            facts = ReplayFacts(version, *script_variables(program, result))
        except Exception:
            pass
    answer = {"diagnostics": list(result.diagnostics), "facts": facts, "workload": str(wl)}
    if script:
        answer["script"] = result.module.script() if result.ok else None
    return answer


def workload_blocks(path: str) -> list[str]:
    """The block names of a workload's `main`, outermost first (root first)."""
    from dragon_dsl.tvm.blocks import block_names

    return block_names(Path(path))


def cuda_source(text: str, path: str | None, workload: str | None, target: Any) -> dict:
    """The CUDA source TVM generates for the replayed script: {"source"} or {"error"} (no GPU needed)."""
    from dragon_dsl.tvm import codegen
    from dragon_dsl.tvm.errors import tvm_message
    from dragon_dsl.tvm.replay import replay
    from dragon_dsl.tvm.target import TargetError, target_kind

    program, diags = check_text(text)
    if has_errors(diags):
        return {"error": "the script has errors"}
    wl = resolve_workload(program, path, workload)
    if wl is None:
        return {"error": NO_WORKLOAD}
    try:
        kind = target_kind(target)
    except TargetError as exc:
        return {"error": str(exc)}
    if kind != "cuda":
        return {
            "error": f"target {json.dumps(target)} (kind {kind}) generates no CUDA: set dragon.target "
            "(or the script's target line) to a CUDA target such as nvidia/nvidia-h100"
        }
    result = replay(program, wl)
    if not result.ok:
        return {"error": "the replay failed", "diagnostics": list(result.diagnostics)}
    try:
        source = codegen.cuda_source(result.module, target)
    except codegen.NoKernel:
        return {
            "error": "TVM generated no CUDA kernel: the schedule binds no loop to blockIdx/threadIdx, so "
            'everything runs on the host (bind loops with bind(loop, "blockIdx.x") ...)'
        }
    except Exception as exc:
        return {"error": f"TVM cannot build this schedule for {json.dumps(target)}: {tvm_message(exc)}"}
    return {"source": source}


def target_tags() -> list[str]:
    """Every target tag TVM knows, sorted."""
    from dragon_dsl.tvm.target import target_tags as tags

    return tags()


# ---- build, verify, time -----------------------------------------------------------------------

_ENGINES: dict = {}


def _close_engines():
    for e in _ENGINES.values():
        try:
            e.close()
        except Exception:
            pass


atexit.register(_close_engines)


def engine_for(device: str, timeout_s: float):
    def make(target):
        from dragon_dsl.engine import Engine

        key = (json.dumps(target, sort_keys=True), device, timeout_s)
        if key not in _ENGINES:
            _ENGINES[key] = Engine(target, device=device, workers=1, timeout_s=timeout_s)
        return _ENGINES[key]

    return make


def check_level(
    text: str, path: str | None, workload: str | None, target: Any, level: str, device: str, timeout_s: float
) -> dict:
    """`dragon-check --level LEVEL` on one script, through the measurement engine for build and above."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}")
    report = check_text_at_level(
        text,
        path or "<script>",
        level=level,
        workload=workload,
        target=target,
        engine_for=engine_for(device, timeout_s),
    )
    return {
        "diagnostics": list(report.diagnostics),
        "figures": dict(report.figures),
        "level_reached": report.level_reached,
    }


def suggest(*args, progress=None):
    from dragon_lsp.suggestions import suggest as run

    return run(*args, progress=progress)
