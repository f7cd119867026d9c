"""Why a generated script is rejected before it is measured: it does not replay from its own text
(`replay_problem`), TVM's compiler rejects it for a GPU target (`compile_problem`), or it would run
correctly but slowly on a GPU (`launch_problem`). Also the two readings of a caller's workload and
target the answer's header needs (`workload_text`, `header_target`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def workload_text(workload) -> str:
    """The workload's TVMScript: the text itself, or the file it names."""
    if isinstance(workload, str) and "\n" in workload:
        return workload
    return Path(workload).read_text(encoding="utf-8")


def header_target(target):
    """The target as a script's header spells it."""
    from dragon_dsl.engine import resolve_target

    return resolve_target(target).spec


def compile_problem(text: str, workload, target: Any) -> str | None:
    """Why TVM's compiler rejects a script for a GPU target before anything runs, or None: the
    replayed schedule is lowered and checked against the target's limits (shared memory, threads,
    vthreads, vector bytes; a bound kernel exists) and compiled to CUDA source. No GPU, no nvcc:
    the engine's build does the same and then compiles the source."""
    from dragon_dsl import to_trace_json
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.compile import compile_problem as problem

    return problem(to_trace_json(text), workload_text(workload), resolve_target(target).spec)


def launch_problem(text: str, workload) -> str | None:
    """Why a GPU script is slow before anything runs, or None: a loop of more than one iteration
    left around a kernel, which the host runs, launching the kernel once per iteration
    (`dragon_dsl.tvm.compile.launch_loops`), or a kernel that leaves the GPU idle (`idle_kernels`).
    TVM compiles and runs both correctly."""
    from dragon_dsl import DragonError, to_trace_json
    from dragon_dsl.tvm.compile import launch_problem as problem

    try:
        trace = to_trace_json(text)
    except DragonError:  # a script that does not check: replay_problem's to report
        return None
    return problem(trace, workload_text(workload))


def replay_problem(text: str, workload) -> str | None:
    """The first error `dragon-check --level replay` reports for a script, or None: a script that
    did not come from the decoder statement by statement (AutoBind's completion) is replayed from
    its own text, as a user's check would, before it is kept."""
    from dragon_dsl.levels import check_text_at_level

    report = check_text_at_level(text, level="replay", workload=workload_text(workload))
    errors = [d for d in report.diagnostics if d.severity.name == "ERROR"]
    return errors[0].message if errors else None
