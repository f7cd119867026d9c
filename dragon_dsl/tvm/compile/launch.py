"""What makes a GPU schedule slow before it runs (TVM compiles and runs it correctly): loops around a
kernel that the host runs, launching the kernel once per iteration (`launch_loops`), and kernels
that leave the GPU idle or starve its threads (`idle_kernels`, `starved_kernels`), read off each
kernel's launch and work (`kernel_shapes`, `kernel_blocks`); `launch_problem` for trace JSON."""

from __future__ import annotations

from dragon_dsl.tvm.compile.bindings import LAUNCH_LOOP, binding_findings
from dragon_dsl.tvm.compile.source import schedule


def launch_loops(mod) -> list:
    """The loops of more than one iteration around a kernel, as (loop name, extent or None when not a
    constant), outermost first, each once: a loop that encloses a nest's outermost bound loop stays on
    the host, which launches the kernel once per iteration. TVM compiles and runs that correctly,
    but slowly: a CUDA model's reductions kept `for j_0 in range(134)` or
    `for ax0 in range(4096)` around their bound loops and ran 6-4,800x slower than dlight. Neither
    MetaSchedule (AutoBind fuses and binds a block's outer loops) nor dlight writes such a loop."""
    return list(dict.fromkeys(loop for kind, _, loop, _ in binding_findings(mod) if kind == LAUNCH_LOOP))


def kernel_shapes(mod) -> list:
    """Each kernel's launch and work, read off the scheduled module: (threads launched, iterations of
    its busiest block, that block's name) per kernel (a nest under an outermost bound loop). Threads
    are the product of the largest extent bound to each blockIdx/threadIdx axis (vthreads run inside
    a thread); a block's iterations are the product of the extents of the kernel's loops around it,
    predicates aside. None where an extent is not a constant."""
    shapes = []
    for threads, blocks in kernel_blocks(mod):
        iterations, busiest = 0, None
        for name, (its, _domain) in blocks.items():
            if its is None:
                iterations, busiest = None, name
                break
            if its > iterations:
                iterations, busiest = its, name
        shapes.append((threads, iterations, busiest))
    return shapes


def kernel_blocks(mod) -> list:
    """Each kernel as (threads launched, {block name: (iterations, domain)}): a block's iterations as
    in `kernel_shapes` (the most of its places in the kernel), its domain the product of its
    iterators' extents (None where one is not a constant)."""
    import tvm
    from tvm.s_tir import SBlockRealize

    kernels = []

    def extent_of(loop):
        return int(loop.extent) if isinstance(loop.extent, tvm.tirx.IntImm) else None

    def domain_of(block):
        size = 1
        for iv in block.iter_vars:
            extent = iv.dom.extent
            if not isinstance(extent, tvm.tirx.IntImm):
                return None
            size *= int(extent)
        return size

    def visit(stmt, kernel, iterations) -> None:
        if isinstance(stmt, tvm.tirx.For):
            extent = extent_of(stmt)
            tag = str(stmt.thread_binding.thread_tag) if stmt.kind == tvm.tirx.ForKind.THREAD_BINDING else ""
            root = kernel is None and tag != ""
            if root:
                kernel, iterations = {"axes": {}, "blocks": {}}, 1
            if tag and not tag.startswith("vthread"):
                known = kernel["axes"].get(tag, 0)
                kernel["axes"][tag] = None if extent is None or known is None else max(known, extent)
            inner = None if iterations is None or extent is None else iterations * extent
            visit(stmt.body, kernel, inner if kernel is not None else None)
            if root:
                threads = 1
                for extent in kernel["axes"].values():
                    threads = None if threads is None or extent is None else threads * extent
                kernels.append((threads, kernel["blocks"]))
        elif isinstance(stmt, SBlockRealize):
            block = stmt.block
            if kernel is not None and block.iter_vars:
                known = kernel["blocks"].get(block.name_hint, (0, None))[0]
                most = None if iterations is None or known is None else max(known, iterations)
                kernel["blocks"][block.name_hint] = (most, domain_of(block))
            if block.init is not None:
                visit(block.init, kernel, iterations)
            visit(block.body, kernel, iterations)
        elif isinstance(stmt, tvm.tirx.SeqStmt):
            for inner in stmt.seq:
                visit(inner, kernel, iterations)
        elif isinstance(stmt, tvm.tirx.IfThenElse):
            visit(stmt.then_case, kernel, iterations)
            if stmt.else_case is not None:
                visit(stmt.else_case, kernel, iterations)
        elif isinstance(getattr(stmt, "body", None), tvm.tirx.Stmt):
            visit(stmt.body, kernel, iterations)

    for _, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            visit(func.body, None, None)
    return kernels


def launch_message(mod) -> str | None:
    """What `launch_loops` finds in MOD, said for the script's author, or None."""
    loops = launch_loops(mod)
    if not loops:
        return None
    named = ", ".join(f"{name} ({extent if extent is not None else '?'})" for name, extent in loops[:4])
    many = len(loops) > 1
    them = "them" if many else "it"
    return (
        f"loop{'s' if many else ''} {named} around the kernel stay{'' if many else 's'} on the host, which "
        f"launches the kernel once per iteration: correct, but slow; fuse {them} into the bound loops or bind {them}"
    )


#: `idle_kernels`: a kernel launching at most IDLE_THREADS threads in all, each running at least
#: IDLE_SERIAL iterations of one block in sequence. dlight launches at least 256 threads on every one
#: of the 74 held-out workloads; a CUDA model's reductions launched 1 to 224 and ran
#: 16,384 to 84 million iterations per thread, 6-7,500x slower than dlight. 5 of the 784 measured
#: CUDA corpus scripts are such kernels (one a GEMV at 2.5 ms), and 12% of MetaSchedule's random
#: design-space samples.
IDLE_THREADS = 128


IDLE_SERIAL = 16384


#: `starved_kernels`: a block of the workload whose iterations keep at most IDLE_THREADS threads busy
#: (its domain over the iterations each thread runs), each running at least STARVED_SERIAL in sequence,
#: whatever the number of threads launched: a 1 x 15,244 row sum split into [None, 256] launches 256
#: threads of which one has work (558 us, dlight 2.3 us). Of a CUDA model's verified answers
#: on the held-out families and operators, the 10 such kernels ran 11-10,000x slower than dlight but
#: one (0.54x of a dlight that took 75 us for 131 KB); none of the 275 CUDA corpus labels whose
#: kernels hold a workload block has one.
STARVED_SERIAL = 2048


def idle_kernels(mod, blocks: set | None = None) -> list:
    """The kernels that leave the GPU idle, as (threads with work, iterations per thread, block):
    launching at most IDLE_THREADS threads, each running IDLE_SERIAL iterations or more; and, given the
    names of the workload's own BLOCKS, `starved_kernels`. Correct, but a GPU of thousands of threads
    runs a handful."""
    idle = [
        (threads, iterations // threads, block)
        for threads, iterations, block in kernel_shapes(mod)
        if threads and iterations and threads <= IDLE_THREADS and iterations >= IDLE_SERIAL * threads
    ]
    named = {block for _, _, block in idle}
    return idle + [k for k in starved_kernels(mod, blocks or set()) if k[2] not in named]


def starved_kernels(mod, blocks: set) -> list:
    """(threads with work, iterations per thread, block) for each block named in BLOCKS (the
    workload's own, not the stages a schedule adds, whose domains compute_at narrows) that keeps at
    most IDLE_THREADS threads busy, each running STARVED_SERIAL iterations or more."""
    out = []
    for threads, kernel in kernel_blocks(mod):
        for name, (iterations, domain) in kernel.items():
            if name not in blocks or not threads or not iterations or not domain:
                continue
            serial = iterations // threads
            busy = min(threads, max(1, domain // max(serial, 1)))
            if busy <= IDLE_THREADS and serial >= STARVED_SERIAL:
                out.append((busy, serial, name))
    return out


def idle_message(mod, blocks: set | None = None) -> str | None:
    """What `idle_kernels` finds in MOD (BLOCKS: the workload's own block names), said for the
    script's author, or None."""
    idle = idle_kernels(mod, blocks)
    if not idle:
        return None
    threads, serial, block = max(idle, key=lambda k: k[1])
    return (
        f"the kernel of block {block!r} keeps {threads} thread{'s' if threads > 1 else ''} in all busy, each "
        f"running {serial:,} of its iterations in sequence: correct, but the GPU's other threads stay idle; "
        f"bind more of its loops to blockIdx/threadIdx (a reduction: split it with rfactor)"
    )


def slow_launch_message(mod, blocks: set | None = None) -> str | None:
    """Why a GPU schedule is slow before it runs, or None: `launch_message`, else `idle_message`."""
    return launch_message(mod) or idle_message(mod, blocks)


def launch_problem(trace: list, workload) -> str | None:
    """`slow_launch_message` of a GPU schedule (trace JSON on WORKLOAD), or None (also when it does
    not replay: `compile_problem` says why)."""
    from dragon_dsl.tvm.blocks import block_names
    from dragon_dsl.tvm.workload import load_workload

    original = load_workload(workload)
    try:
        scheduled = schedule(original, {"trace": trace}, None)
    except Exception:
        return None
    return slow_launch_message(scheduled, set(block_names(original)))
