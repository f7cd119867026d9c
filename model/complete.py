"""Completing a GPU script that leaves blocks on the host: MetaSchedule's AutoBind rule binds them.

The CUDA model's commonest rejected answer (H200 evaluation, decoder version 4: 29 of the 47
first answers that failed to build) schedules the main computation but leaves a stage under no
thread binding (a `PadInput`, a cache read, a normalisation's reduction), or binds nothing at
all. TVM would compile such a stage for the host, which cannot read the GPU's buffers
(`engine.build.HOST_BLOCK`). MetaSchedule never writes such a schedule because its design space
ends with the AutoBind rule, which fuses a block's outer spatial loops and binds them to
`blockIdx.x`/`threadIdx.x` (a unit loop when there is none). `bind_host_blocks` applies that same
rule, through TVM, to each block left on the host, after the model's own statements.

The answer stays a whole script written in the language (the model's statements, then the
rule's), replayed and checked like any other; nothing is measured here. Invariant: a script
without host blocks is never changed (None is returned), and a completion that TVM refuses
gives None, so the caller keeps the model's script and its compile problem.
"""

from __future__ import annotations

from typing import Any, Optional

#: the thread extents AutoBind may choose (MetaSchedule's defaults for CUDA)
THREAD_EXTENTS = (32, 64, 128, 256, 512, 1024)

_RULES: dict = {}   # max threads per block -> an AutoBind rule


def _rule(target):
    """AutoBind for TARGET's thread limit. Given the limit, the rule needs no TuneContext (building one
    imports every tensor intrinsic of TVM: 30-100 s)."""
    from tvm.s_tir import meta_schedule as ms

    limit = int(target.attrs["max_threads_per_block"])
    if limit not in _RULES:
        _RULES[limit] = ms.schedule_rule.AutoBind(max_threadblocks=256, max_threads_per_block=limit,
                                                  thread_extents=[t for t in THREAD_EXTENTS if t <= limit])
    return _RULES[limit]


def bind_host_blocks(text: str, workload, target: Any, seed: int = 1) -> Optional[str]:
    """TEXT's script body followed by AutoBind's statements for every block TEXT leaves on the
    host (canonical form, no header), or None: no such block, a GPU target is not asked for, or
    TVM refuses the rule on one of them (the script is then left as the model wrote it).
    The rule's thread-extent choices are drawn from the schedule's random state seeded by SEED,
    so the same script always gets the same completion."""
    import tvm

    from dragon_dsl import to_trace_json
    from dragon_dsl.engine.build import host_blocks
    from dragon_dsl.engine.targets import resolve_target
    from dragon_dsl.tvm import trace as tr
    from dragon_dsl.tvm.workload import load_workload
    from dragon_model.data import script_body

    spec = resolve_target(target)
    if not spec.is_gpu:
        return None
    tvm_target = tvm.target.Target(spec.spec)
    try:
        sch = tr.apply(to_trace_json(text), load_workload(workload), seed=seed)
        names = host_blocks(sch.mod)
        if not names:
            return None
        rule = _rule(tvm_target)
        for name in names:
            done = rule.apply(sch, sch.get_sblock(name))
            if not done:
                return None
            sch = done[0]
        return script_body(tr.trace_json(sch))
    except Exception:  # noqa: BLE001 - TVM refuses the rule (a nest it cannot fuse): no completion
        return None
