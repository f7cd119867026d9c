"""What TVM knows, as plain records (`dragon_dsl.tvm.facts`): a workload's blocks and buffers, a
target's limits, and a schedule after replay.

The script is replayed on fresh schedules exactly as TVM replays traces (`replay.replay_steps`),
reading the loops and blocks each instruction is about to use (their extents at that moment) and
what each instruction bound. Buffer footprints come from TVM's own buffer compaction of the
scheduled module.
"""

from __future__ import annotations

import json
from functools import cache

from dragon_dsl.language.check import Program
from dragon_dsl.tvm.blocks import children, walk
from dragon_dsl.tvm.facts import (
    Access,
    Axis,
    BlockInfo,
    BufferInfo,
    Kernel,
    LoopState,
    ScheduleInfo,
    TargetInfo,
    WorkloadInfo,
)

_ITER_KIND = {0: "spatial", 2: "reduction"}
_FOR_KIND = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled", 4: "thread"}


def _int(e):
    v = getattr(e, "value", None)
    return int(v) if isinstance(v, int) else None


def _vars(expr) -> set[str]:
    from tvm.tirx.analysis import undefined_vars

    return {v.name for v in undefined_vars(expr, [])}


def _block_info(block) -> BlockInfo:
    axes = [
        Axis(iv.var.name, _int(iv.dom.extent) or 0, _ITER_KIND.get(int(iv.iter_type), "other"))
        for iv in block.iter_vars
    ]
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
    """The blocks (program order), parameters, intermediate buffers and estimated FLOPs of `main`."""
    from tvm import s_tir

    from dragon_dsl.tvm.workload import estimate_flops

    func = mod["main"]
    blocks: dict[str, BlockInfo] = {}
    intermediates: dict[str, BufferInfo] = {}

    def visit(node):
        if isinstance(node, s_tir.SBlock):
            for b in node.alloc_buffers:
                intermediates[b.name] = _buffer(b)
            if node.name_hint != "root" and node.name_hint not in blocks:
                blocks[node.name_hint] = _block_info(node)

    walk(func.body, visit)
    params = [_buffer(p, "global") for p in func.params if hasattr(p, "shape")]
    return WorkloadInfo(blocks, params, intermediates, estimate_flops(mod))


def target_info(target) -> TargetInfo:
    """A target's kind and limits; from its spelling alone when TVM does not know it."""
    from dragon_dsl.tvm.target import TargetError, tvm_target

    text = target if isinstance(target, str) else json.dumps(target, sort_keys=True)
    if target is None:
        return TargetInfo("llvm", "llvm")
    try:
        t = tvm_target(target)
    except TargetError:  # an unknown target: reason from its spelling alone
        kind = "cuda" if "nvidia" in text or "cuda" in text else "llvm"
        return TargetInfo(kind, text)
    attrs = {str(k): v for k, v in t.attrs.items()}

    def num(key):
        v = attrs.get(key)
        try:
            return int(str(v)) if v is not None else None
        except ValueError:
            return None

    return TargetInfo(
        t.kind.name,
        text,
        cores=num("num-cores"),
        max_threads_per_block=num("max_threads_per_block"),
        max_shared_memory_per_block=num("max_shared_memory_per_block"),
        warp_size=num("thread_warp_size"),
        registers_per_block=num("registers_per_block"),
    )


def loop_state(sch, loop_rv) -> LoopState:
    """A loop as the schedule holds it now: extent, kind, thread tag and the block axes it drives."""
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

    walk(f.body, visit)
    return LoopState(var, _int(f.extent), kind, thread, tuple(axis_kinds), tuple(axis_names))


def describe(sch, rv):
    """A LoopState for a loop, the block's name for a block, None for anything else."""
    from tvm.s_tir.schedule import LoopRV, SBlockRV

    if isinstance(rv, LoopRV):
        return loop_state(sch, rv)
    if isinstance(rv, SBlockRV):
        return sch.get(rv).name_hint
    return None


def _last_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def schedule_info(program: Program, mod) -> ScheduleInfo:
    """Replay the program and read loops and blocks as each instruction sees them."""
    from dragon_dsl.tvm.replay import replay_steps

    info = ScheduleInfo(ok=True)

    def before(_i, sch, inputs):
        for mine, rv in inputs:
            if mine is None or mine in info.first_seen:
                continue
            try:
                state = describe(sch, rv)
            except Exception:
                state = None
            if state is not None:
                info.first_seen[mine] = state

    try:
        sch = replay_steps(program, mod, before=before)
    except Exception as exc:
        return ScheduleInfo(ok=False, error=_last_line(exc))
    for inst, tinst in zip(program.instructions, sch.trace.insts):
        for mine, rv in zip(inst.outputs, tinst.outputs):
            try:
                state = describe(sch, rv)
            except Exception:
                continue
            if state is not None:
                info.final[mine] = state
    info.kernels = _kernels(sch.mod["main"])
    info.allocations = _allocations(sch.mod)
    return info


def script_variables(program: Program, result) -> tuple[dict, dict]:
    """What a replayed script's variables denote right after the instruction that binds them, and
    the decisions TVM kept: ({name: {"extent": n} | {"block": name} | {"value": n}}, {index: decision}).
    RESULT is the program's successful `replay.replay` result."""
    from tvm.s_tir.schedule import ExprRV, LoopRV, SBlockRV

    from dragon_dsl.tvm.replay import replay_steps
    from dragon_dsl.tvm.trace import trace_json

    variables: dict[str, dict] = {}

    def after(_i, sch, outputs):
        for name, rv in outputs:
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
            except Exception:
                continue

    replay_steps(program, result.workload, after=after)
    decisions = {int(i): d for i, d in trace_json(result.schedule)[1]}
    return variables, decisions


def _kernels(func) -> list[Kernel]:
    """One Kernel per outermost thread-bound loop nest, with the largest extent of each thread axis."""
    from tvm import tirx

    kernels: list[Kernel] = []

    def collect(node, axes):
        def visit(n):
            if isinstance(n, tirx.For) and n.thread_binding is not None:
                tag = n.thread_binding.thread_tag
                axes[tag] = max(axes.get(tag, 1), _int(n.extent) or 1)

        walk(node, visit)

    def find(node):
        if isinstance(node, tirx.For) and node.thread_binding is not None:
            axes: dict[str, int] = {}
            collect(node, axes)
            kernels.append(Kernel(dict(sorted(axes.items()))))
            return
        for child in children(node):
            find(child)

    find(func.body)
    return kernels


def _allocations(mod) -> list[BufferInfo]:
    """Buffers allocated inside the scheduled function, with the shapes TVM compacts them to."""
    import tvm
    from tvm import s_tir

    try:
        lowered = tvm.transform.Sequential(
            [
                s_tir.transform.LowerInitBlock(),
                s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
                s_tir.transform.ConvertBlocksToOpaque(),
                s_tir.transform.CompactBufferAllocation(),
            ]
        )(mod)
    except Exception:
        lowered = mod
    out: dict[str, BufferInfo] = {}

    def visit(n):
        if isinstance(n, s_tir.SBlock):
            for b in n.alloc_buffers:
                out.setdefault(b.name, _buffer(b))

    walk(lowered["main"].body, visit)
    return list(out.values())


# ---- the objects of a replayed schedule, as counts and extents (the decoder's state) -------------


# The decoder asks these of every live object after every statement (thousands of queries a script):
# they call TVM's schedule functions directly, as the Schedule methods do after TVM's Python-side
# argument check (`type_checked`), which cost 0.24 ms a call, more than the query itself (6.4 s of a
# 23 s answer of the second-generation CUDA model). The arguments here are always the schedule's own
# random variables; the queries are recorded in the schedule's trace as before.


@cache
def _api():
    """TVM's schedule functions, looked up once (the import statement cost 1.1 us a call, 24,000 calls in the
    state reads of a 69-statement answer's prefixes)."""
    from tvm.s_tir.schedule import _ffi_api

    return _ffi_api


def _get(sch, rv):
    """`sch.get(rv)` for a block or loop variable."""
    return _api().ScheduleGet(sch, rv)


def _loops(sch, block_rv) -> list:
    """`sch.get_loops(block_rv)`."""
    return list(_api().ScheduleGetLoops(sch, block_rv))


def _count(fn, sch, rv) -> int | None:
    try:
        return len(fn(sch, rv))
    except Exception:
        return None


def alive(sch, rv) -> bool:
    """Whether the object RV denotes still exists in the scheduled module."""
    try:
        _get(sch, rv)
    except Exception:
        return False
    return True


def block_counts(sch, rv) -> dict:
    """How many loops, child blocks, producers, consumers and output blocks a block has (None: unknown).
    Each count is a schedule query, which the schedule's trace records."""
    api = _api()
    return {
        "loops": _count(api.ScheduleGetLoops, sch, rv),
        "children": _count(api.ScheduleGetChildBlocks, sch, rv),
        "producers": _count(api.ScheduleGetProducers, sch, rv),
        "consumers": _count(api.ScheduleGetConsumers, sch, rv),
        "outputs": _count(api.ScheduleGetOutputBlocks, sch, rv),
    }


def block_iters(sch, rv) -> tuple | None:
    """The names of a block's iterators, in order (None: unknown)."""
    try:
        return tuple(str(iv.var.name) for iv in _get(sch, rv).iter_vars)
    except Exception:
        return None


def loop_extent(sch, rv) -> int | None:
    """A loop's constant extent, None when it is symbolic."""
    return _int(getattr(_get(sch, rv), "extent", None))


def reduction_loop(sch, rv) -> bool:
    """Whether loop RV drives reduction axes only (`loop_state`; False where unknown, or where it
    drives no axis)."""
    try:
        kinds = set(loop_state(sch, rv).axis_kinds)
    except Exception:
        return False
    return kinds == {"reduction"}


def loop_children(sch, rv) -> list | None:
    """The blocks under a loop (None: unknown)."""
    try:
        return list(_api().ScheduleGetChildBlocks(sch, rv))
    except Exception:
        return None


def innermost(sch, rv, blocks: list, unit_inside: bool = False) -> bool:
    """Whether no loop is nested in loop RV: it is the last loop of every block in BLOCKS (those
    under it); with `unit_inside`, loops of one iteration may be nested in it (dlight vectorizes
    such loops on GPUs, where they build)."""
    loop = _get(sch, rv)
    try:
        for c in blocks:
            loops = [_get(sch, lp) for lp in _loops(sch, c)]
            at = next(i for i, lp in enumerate(loops) if lp.same_as(loop))
            inner = loops[at + 1 :]
            if inner and not (unit_inside and all(_extent(lp) == 1 for lp in inner)):
                return False
        return True
    except Exception:
        return False


def _extent(loop) -> int | None:
    try:
        return int(loop.extent)
    except (TypeError, ValueError):
        return None


def serial(sch, rv) -> bool:
    """Whether a loop is still serial (not yet bound, parallel, vectorized or unrolled)."""
    from tvm.tirx import ForKind

    try:
        return _get(sch, rv).kind == ForKind.SERIAL
    except Exception:
        return False


def nested_parallel(sch) -> bool:
    """Whether some block sits under two parallel loops (TVM accepts the schedule, but the CPU build
    fails: "Nested parallel loop is not supported by threadpool")."""
    from tvm.tirx import ForKind

    from dragon_dsl.tvm.blocks import block_rvs

    try:
        return any(sum(sch.get(lp).kind == ForKind.PARALLEL for lp in sch.get_loops(b)) > 1 for b in block_rvs(sch))
    except Exception:
        return False


def gemm_layouts(sch, block_rv) -> dict | None:
    """dlight's normal form of a GEMM-like block (`C[S, I, J] += A[S, I, K] * B[S, J, K]`): the
    lambdas its Matmul rule writes after reindexing the block's operands, as Dragon text, under
    "read(0)", "read(1)" (the reindexed A and B, each transformed at `write(0)`), "write(0)" (the
    reindexed C, at `read(0)`) and "block" (transform_block_layout of the block itself); None when
    the block is not GEMM-like. Computed by dlight's own analysis (`get_index_map`) of the block as
    the schedule holds it now, which is how dlight computes them: after the three reindexes."""
    from tvm import ir
    from tvm.s_tir.dlight.gpu.matmul import get_index_map

    from dragon_dsl.language.codec import index_map as imap

    try:
        maps = get_index_map(_get(sch, block_rv))
    except Exception:
        return None
    if maps is None:
        return None
    texts = [imap.render(imap.normalize_params(imap.from_graph(ir.save_json(m)))) for m in maps]
    return dict(zip(("block", "read(0)", "read(1)", "write(0)"), texts))


def is_gemv(sch, block_rv) -> bool:
    """Whether dlight's GEMV analysis (`is_gemv`: a reduction `C[...] += f(A, V)` reading a vector
    V that uses fewer of the block's iterators than the block has) accepts the block as the
    schedule holds it now. dlight's GEMV rule alone writes the normal form with two unit loops
    (one for the vector chunk, one for the batch) on one block: its other rules add one."""
    from tvm.s_tir.dlight.analysis import SBlockInfo
    from tvm.s_tir.dlight.analysis.gemv import is_gemv as dlight_is_gemv

    try:
        block = _get(sch, block_rv)
        info = SBlockInfo(
            name=block.name_hint,
            iters=[],
            block_rv=block_rv,
            reduction_block=any(int(iv.iter_type) == 2 for iv in block.iter_vars),
        )
        return bool(dlight_is_gemv(sch, info))
    except Exception:
        return False
