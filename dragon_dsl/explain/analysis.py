"""What TVM knows: the workload's blocks and buffers, and the schedule after replay.

The only module of `dragon_dsl.explain` that imports TVM (lazily). The script is
replayed twice on fresh schedules, exactly as TVM replays traces: once from its
JSON to get TVM's trace object, and once more through that trace with a
callback that TVM calls before each instruction, to read the loops and blocks
the instruction is about to use (their extents at that moment). Buffer
footprints come from TVM's own buffer compaction of the scheduled module.
"""

from __future__ import annotations

from dragon_dsl.check import Program
from dragon_dsl.codec.encode import encode
from dragon_dsl.explain.info import (
    Access, Axis, BlockInfo, BufferInfo, Kernel, LoopState, ScheduleInfo, TargetInfo, WorkloadInfo,
)

_CHILDREN = ("seq", "body", "block", "init", "then_case", "else_case")


def _walk(node, visit):
    """Pre-order walk over TIR statements (the Python API offers no visitor)."""
    visit(node)
    for attr in _CHILDREN:
        child = getattr(node, attr, None) if hasattr(node, attr) else None
        if child is None:
            continue
        if attr == "seq":
            for c in child:
                _walk(c, visit)
        elif not isinstance(child, (str, int)):
            _walk(child, visit)


def _int(e):
    v = getattr(e, "value", None)
    return int(v) if isinstance(v, int) else None


def _vars(expr) -> set[str]:
    from tvm.tirx.analysis import undefined_vars

    return {v.name for v in undefined_vars(expr, [])}


_ITER_KIND = {0: "spatial", 2: "reduction"}


def _block_info(block) -> BlockInfo:
    axes = [Axis(iv.var.name, _int(iv.dom.extent) or 0, _ITER_KIND.get(int(iv.iter_type), "other"))
            for iv in block.iter_vars]
    names = {a.name for a in axes}

    def accesses(regions):
        out = []
        for r in regions:
            used: set[str] = set()
            for rng in r.region:
                used |= _vars(rng.min)
            out.append(Access(r.source.name, tuple(a for a in (x.name for x in axes) if a in used and a in names)))
        return out

    writes = accesses(block.writes)
    dtype = str(block.writes[0].source.dtype) if len(block.writes) else "float32"
    return BlockInfo(block.name_hint, axes, accesses(block.reads), writes, dtype)


def _buffer(buf, scope=None) -> BufferInfo:
    shape = tuple(_int(s) or 0 for s in buf.shape)
    return BufferInfo(buf.name, shape, str(buf.dtype), scope or buf.scope())


def workload_info(mod) -> WorkloadInfo:
    from tvm import s_tir

    func = mod["main"]
    blocks: dict[str, BlockInfo] = {}
    intermediates: dict[str, BufferInfo] = {}

    def visit(node):
        if isinstance(node, s_tir.SBlock):
            for b in node.alloc_buffers:
                intermediates[b.name] = _buffer(b)
            if node.name_hint != "root" and node.name_hint not in blocks:
                blocks[node.name_hint] = _block_info(node)

    _walk(func.body, visit)
    params = [_buffer(p, "global") for p in func.params if hasattr(p, "shape")]
    try:
        flops = float(s_tir.analysis.estimate_tir_flops(mod))
    except Exception:  # noqa: BLE001 - TVM's estimator rejects some kernels; the fact is then left out
        flops = 0.0
    return WorkloadInfo(blocks, params, intermediates, flops)


def target_info(target) -> TargetInfo:
    import json

    import tvm

    text = target if isinstance(target, str) else json.dumps(target, sort_keys=True)
    if target is None:
        return TargetInfo("llvm", "llvm")
    try:
        t = tvm.target.Target(target)
    except Exception:  # noqa: BLE001 - an unknown target: reason from its spelling alone
        kind = "cuda" if "nvidia" in text or "cuda" in text else "llvm"
        return TargetInfo(kind, text)
    attrs = {str(k): v for k, v in t.attrs.items()}

    def num(key):
        v = attrs.get(key)
        try:
            return int(str(v)) if v is not None else None
        except ValueError:
            return None

    return TargetInfo(t.kind.name, text, cores=num("num-cores"),
                      max_threads_per_block=num("max_threads_per_block"),
                      max_shared_memory_per_block=num("max_shared_memory_per_block"),
                      warp_size=num("thread_warp_size"), registers_per_block=num("registers_per_block"))


_FOR_KIND = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled", 4: "thread"}


def _loop_state(sch, loop_rv) -> LoopState:
    from tvm import s_tir

    f = sch.get(loop_rv)
    kind = _FOR_KIND.get(int(f.kind), "serial")
    thread = f.thread_binding.thread_tag if f.thread_binding is not None else None
    axis_kinds: list[str] = []
    axis_names: list[str] = []
    var = f.loop_var.name

    def visit(node):
        if isinstance(node, s_tir.SBlockRealize) and not axis_kinds:
            for iv, value in zip(node.block.iter_vars, node.iter_values):
                if var in _vars(value):
                    axis_kinds.append(_ITER_KIND.get(int(iv.iter_type), "other"))
                    axis_names.append(iv.var.name)

    _walk(f.body, visit)
    return LoopState(var, _int(f.extent), kind, thread, tuple(axis_kinds), tuple(axis_names))


def _describe(sch, rv):
    from tvm.s_tir.schedule import LoopRV, SBlockRV

    if isinstance(rv, LoopRV):
        return _loop_state(sch, rv)
    if isinstance(rv, SBlockRV):
        return sch.get(rv).name_hint
    return None


def schedule_info(program: Program, mod) -> ScheduleInfo:
    """Replay the program and read loops and blocks as each instruction sees them."""
    from tvm import s_tir

    from dragon_dsl.tvm.trace import apply

    trace_json = encode(program)
    try:
        trace = apply(trace_json, mod).trace
    except Exception as exc:  # noqa: BLE001 - TVM's own errors; facts then come from the script alone
        return ScheduleInfo(ok=False, error=str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__)
    # TVM's output names -> the script's names (positions agree; the encoder derives TVM's names)
    script_name: dict[str, str] = {}
    for inst, (_, _, _, outs) in zip(program.instructions, trace_json[0]):
        for mine, tvms in zip(inst.outputs, outs):
            script_name[tvms] = mine
    info = ScheduleInfo(ok=True)
    sch = s_tir.Schedule(mod, seed=1)
    counter = [0]

    def provider(inst, inputs, attrs, decision):
        i = counter[0]
        counter[0] += 1
        json_inputs = trace_json[0][i][1] if i < len(trace_json[0]) else []
        for rv, name in zip(inputs, json_inputs):
            mine = script_name.get(name) if isinstance(name, str) else None
            if mine is None or mine in info.first_seen:
                continue
            try:
                state = _describe(sch, rv)
            except Exception:  # noqa: BLE001 - an input TVM cannot resolve: nothing to record
                state = None
            if state is not None:
                info.first_seen[mine] = state
        return decision

    try:
        trace.apply_to_schedule(sch, False, provider)
    except Exception as exc:  # noqa: BLE001
        return ScheduleInfo(ok=False, error=str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__)
    for inst, tinst in zip(program.instructions, sch.trace.insts):
        for mine, rv in zip(inst.outputs, tinst.outputs):
            try:
                state = _describe(sch, rv)
            except Exception:  # noqa: BLE001 - removed by a later instruction (a split loop, an inlined block)
                continue
            if state is not None:
                info.final[mine] = state
    func = sch.mod["main"]
    info.kernels = _kernels(func)
    info.allocations = _allocations(sch.mod)
    return info


def _kernels(func) -> list[Kernel]:
    from tvm import tirx

    kernels: list[Kernel] = []

    def collect(node, axes):
        def visit(n):
            if isinstance(n, tirx.For) and n.thread_binding is not None:
                tag = n.thread_binding.thread_tag
                ext = _int(n.extent) or 1
                axes[tag] = max(axes.get(tag, 1), ext)
        _walk(node, visit)

    def find(node):
        if isinstance(node, tirx.For) and node.thread_binding is not None:
            axes: dict[str, int] = {}
            collect(node, axes)
            kernels.append(Kernel(dict(sorted(axes.items()))))
            return
        for attr in _CHILDREN:
            child = getattr(node, attr, None) if hasattr(node, attr) else None
            if child is None:
                continue
            if attr == "seq":
                for c in child:
                    find(c)
            else:
                find(child)

    find(func.body)
    return kernels


def _allocations(mod) -> list[BufferInfo]:
    """Buffers allocated inside the scheduled function, with the shapes TVM compacts them to."""
    import tvm
    from tvm import s_tir, tirx

    try:
        lowered = tvm.transform.Sequential([
            s_tir.transform.LowerInitBlock(), s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
            s_tir.transform.ConvertBlocksToOpaque(), s_tir.transform.CompactBufferAllocation(),
        ])(mod)
    except Exception:  # noqa: BLE001 - compaction is best effort; fall back to the declared shapes
        lowered = mod
    out: dict[str, BufferInfo] = {}

    def visit(n):
        if isinstance(n, s_tir.SBlock):
            for b in n.alloc_buffers:
                out.setdefault(b.name, _buffer(b))

    _walk(lowered["main"].body, visit)
    return list(out.values())
