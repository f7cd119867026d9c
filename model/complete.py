"""Completing a GPU script that leaves blocks on the host: MetaSchedule's AutoBind rule binds them.

A CUDA model's commonest rejected answer (in one GPU evaluation 29 of the 47 first answers that
failed to build) schedules the main computation but leaves a stage under no
thread binding (a `PadInput`, a cache read, a normalisation's reduction), or binds nothing at
all. TVM would compile such a stage for the host, which cannot read the GPU's buffers
(`dragon_dsl.tvm.compile.HOST_BLOCK`). MetaSchedule never writes such a schedule because its design
space ends with the AutoBind rule, which fuses a block's outer spatial loops and binds them to
`blockIdx.x`/`threadIdx.x` (a unit loop when there is none). `bind_host_blocks` applies that same
rule, through the TVM bridge (`dragon_dsl.tvm.autobind`), to each block left on the host, after the
model's own statements; before it, as MetaSchedule's CUDA rules do, AutoInline inlines the ones it
can (a `reindex` copy, an epilogue), which then run inside the kernel that reads or writes them.

The answer stays a whole script written in the language (the model's statements, then the
rule's), replayed and checked like any other; nothing is measured here. Invariant: a script
without host blocks is never changed (None is returned), and a completion that TVM refuses
gives None, so the caller keeps the model's script and its compile problem.
"""

from __future__ import annotations

from typing import Any


def bind_host_blocks(text: str, workload, target: Any, seed: int = 1, inline: bool = True) -> str | None:
    """TEXT's script body followed by AutoInline's statements for the blocks TEXT leaves on the host
    that it inlines (INLINE: MetaSchedule's CUDA rules inline before they bind), then AutoBind's for
    every one still there (canonical form, no header), or None: no such block, a GPU target is not
    asked for, or TVM refuses the rule on one of them (the script is then left as the model wrote it).
    The rule's thread-extent choices are drawn from the schedule's random state seeded by SEED,
    so the same script always gets the same completion."""
    from dragon_dsl import DragonError, to_trace_json
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm import autobind
    from dragon_model.data import script_body

    spec = resolve_target(target)
    if not spec.is_gpu:
        return None
    try:
        trace = to_trace_json(text)
    except DragonError:  # a script that does not check has nothing to complete
        return None
    completed = autobind.bind_host_blocks(trace, workload, spec.spec, seed=seed, inline=inline)
    return None if completed is None else script_body(completed)


#: the instructions that move a block under another block's loop (a stage computed at a kernel's loop)
_MOVES = ("compute_at", "reverse_compute_at")


def separate_racing_stages(text: str, workload, target: Any, seed: int = 1) -> str | None:
    """For a GPU script with a reduction stage that every thread of a kernel runs into the same
    shared elements (`dragon_dsl.tvm.compile.RACING_REDUCTION`: a second `rfactor` stage computed at
    the blockIdx loop, its loops unbound), the script body with that stage given a kernel of its own:
    the statement that computed it there left out (the last such statement whose removal works), the
    stage then left on the host and bound by AutoBind (`bind_host_blocks`). None when the script has
    no such stage, or no removal gives a script the compile check passes. The model writes the racing
    stage on every retry for row sums it has never seen (6 of 10 such answers on the held-out
    families and operators); its own statements stay, in their order, but one."""
    from dragon_dsl import DragonError, to_trace_json
    from dragon_dsl.engine import resolve_target
    from dragon_dsl.tvm.compile import RACING_REDUCTION, compile_problem, schedule, thread_binding_problems
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.data import CALL, body_of_text

    spec = resolve_target(target)
    if not spec.is_gpu:
        return None
    try:
        body = body_of_text(text)
        scheduled = schedule(load_workload(workload), {"trace": to_trace_json(body)}, None)
    except Exception:
        return None
    if not any(kind == RACING_REDUCTION for kind, _ in thread_binding_problems(scheduled)):
        return None
    lines = body.splitlines(keepends=True)
    moves = [i for i, line in enumerate(lines) if (m := CALL.match(line)) and m.group(1) in _MOVES]
    for i in reversed(moves):
        completed = bind_host_blocks("".join(lines[:i] + lines[i + 1 :]), workload, spec.spec, seed=seed)
        if completed is None:
            continue
        try:
            if compile_problem(to_trace_json(completed), workload, spec.spec) is None:
                return completed
        except DragonError:
            continue
    return None
