"""Binding blocks left on the host with MetaSchedule's AutoBind rule, applied through TVM.

A GPU schedule that leaves a stage under no thread binding (a `PadInput`, a cache read, a
normalisation's reduction) or binds nothing at all would compile that stage for the host, which
cannot read the GPU's buffers (`compile.HOST_BLOCK`). MetaSchedule never writes such a schedule:
its design space ends with the AutoBind rule, which fuses a block's outer spatial loops and binds
them to `blockIdx.x`/`threadIdx.x` (a unit loop when there is none). `bind_host_blocks` applies
that same rule to each block left on the host, after the trace's own instructions. Before it, as
MetaSchedule's CUDA rules do, AutoInline inlines each such block that it can (into its consumers
or its producers): a `reindex` copy or an epilogue left on the host then runs inside the kernel
that reads or writes it instead of as a kernel of its own.
"""

from __future__ import annotations

#: the thread extents AutoBind may choose (MetaSchedule's defaults for CUDA)
THREAD_EXTENTS = (32, 64, 128, 256, 512, 1024)

_RULES: dict = {}  # max threads per block -> an AutoBind rule


def _rule(target):
    """AutoBind for TARGET's thread limit. Given the limit, the rule needs no TuneContext (building one
    imports every tensor intrinsic of TVM: 30-100 s)."""
    from tvm.s_tir import meta_schedule as ms

    limit = int(target.attrs["max_threads_per_block"])
    if limit not in _RULES:
        _RULES[limit] = ms.schedule_rule.AutoBind(
            max_threadblocks=256, max_threads_per_block=limit, thread_extents=[t for t in THREAD_EXTENTS if t <= limit]
        )
    return _RULES[limit]


def _inliner():
    """MetaSchedule's AutoInline with its CUDA defaults (`ScheduleRule.create("cuda")`)."""
    from tvm.s_tir import meta_schedule as ms

    if "inline" not in _RULES:
        _RULES["inline"] = ms.schedule_rule.AutoInline(
            into_producer=True,
            into_consumer=True,
            inline_const_tensor=True,
            disallow_if_then_else=False,
            require_injective=False,
            require_ordered=False,
            disallow_op=None,
        )
    return _RULES["inline"]


def inline_host_blocks(sch, names: list):
    """SCH with AutoInline applied to each block left on the host (NAMES: `host_blocks`) that it
    inlines, one at a time until none is left that it can: a new schedule, or SCH unchanged."""
    from dragon_dsl.tvm.compile import host_blocks

    rule = _inliner()
    tried: set = set()
    while True:
        todo = [n for n in names if n not in tried]
        if not todo:
            return sch
        name = todo[0]
        tried.add(name)
        try:
            done = rule.apply(sch, _host_block(sch, [name]))
        except Exception:
            continue
        if done:
            left = host_blocks(done[0].mod)
            if len(left) < len(names):
                sch, names, tried = done[0], left, set()


def bind_host_blocks(trace: list, workload, target, seed: int = 1, inline: bool = True) -> list | None:
    """The trace JSON of TRACE's schedule followed by AutoInline's instructions for the blocks it
    leaves on the host that can be inlined (INLINE; `inline_host_blocks`), then AutoBind's for every
    one still there, or None: no such block, or TVM refuses the rule on one of them. TARGET is a
    GPU target (a tag, a dict or a Target). The rule's thread-extent choices are drawn from the
    schedule's random state seeded by SEED, so the same trace always gets the same completion."""
    from dragon_dsl.tvm.compile import host_blocks
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.trace import apply, trace_json
    from dragon_dsl.tvm.workload import load_workload

    tvm_tgt = tvm_target(target)
    try:
        sch = apply(trace, load_workload(workload), seed=seed)
        names = host_blocks(sch.mod)
        if not names:
            return None
        if inline:
            sch = inline_host_blocks(sch, names)
            names = host_blocks(sch.mod)
            if not names:
                return trace_json(sch)
        rule = _rule(tvm_tgt)
        for _ in range(len(names)):  # one application a block left on the host
            done = rule.apply(sch, _host_block(sch, names))
            if not done:
                return None
            sch = done[0]
            names = host_blocks(sch.mod)
            if not names:
                return trace_json(sch)
        return None
    except Exception:
        return None


def _host_block(sch, names: list):
    """The first block left on the host, by its place in the schedule: a child of the root block
    named in NAMES (`host_blocks`) under no loop bound to a thread. Not by name alone: two stages
    of one block's rfactors are both named after it (`Y_rf`), and TVM's get_sblock refuses a name
    two blocks share."""
    import tvm

    for rv in sch.get_child_blocks(sch.get_sblock("root")):
        if sch.get(rv).name_hint in names and not any(
            sch.get(loop).kind == tvm.tirx.ForKind.THREAD_BINDING for loop in sch.get_loops(rv)
        ):
            return rv
    raise ValueError(f"no block of {names} is left on the host")
