"""Thread loops: the one walk over a module's loops bound to GPU threads (`binding_findings`), and
what it finds that TVM 0.27 compiles but cannot run: blocks left on the host (`host_blocks`),
inner thread loops longer than their outer one, thread extents and racing reductions
(`thread_binding_problems`), and the loops around a kernel that the host runs (LAUNCH_LOOP)."""

from __future__ import annotations

from dragon_dsl.tvm.compile.racing import RACING_REDUCTION, SHARED_SCOPES, racing_reductions
from dragon_dsl.tvm.compile.realizes import reduce_values
from dragon_dsl.tvm.compile.thread_extents import extent_mismatches

#: kinds of `thread_binding_problems`
HOST_BLOCK = "host_block"


LOOP_PAST_OUTER = "thread_loop_past_outer"


#: not a problem of correctness (`thread_binding_problems` leaves it out): see `launch_loops`
LAUNCH_LOOP = "launch_loop"


def thread_binding_problems(mod) -> list:
    """What TVM 0.27 compiles without complaint but cannot run correctly on a GPU, as (kind, message):
      * HOST_BLOCK: a block (other than the root) under no loop bound to blockIdx/threadIdx/vthread:
        SplitHostDevice leaves it in the host function, which then reads the GPU's buffers from the
        CPU (a segfault; neither VerifyMemory nor VerifyGPUCode objects);
      * LOOP_PAST_OUTER: a thread axis bound by two nested loops, the inner one longer: both loop
        variables become the same thread index (MetaSchedule's cooperative fetch relies on it), so
        the inner loop's iterations past the outer extent never run (outputs unwritten or wrong); an
        inner loop of extent 1 too: its variable is the thread index, 0 in one thread only (two
        model answers left 3 of 4 and 7 of 8 outputs unwritten; none of 400 training labels and
        296 verified model answers binds one);
      * EXTENT_MISMATCH: one kernel (a nest under its outermost bound loop) binds a thread axis
        with two extents (> 1): a kernel has one block shape and TVM launches it
        with one of them (`__launch_bounds__(6)` for an rms_norm whose stages bound threadIdx.x to
        6 and 16), so the other loop runs with the wrong number of threads. Nested loops of one axis
        count too when the inner is shorter (a model's conv2d: threadIdx.x 4 inside threadIdx.x 32,
        outputs unwritten; MetaSchedule's cooperative fetch always repeats the extent); an inner
        one that is longer is LOOP_PAST_OUTER's. Seen in 7 of 9 model answers that compiled but
        failed on the GPU; in none of the 784 verified corpus scripts;
      * RACING_REDUCTION: a reduction block in a kernel with threads, under no loop bound to one of
        the kernel's threadIdx axes, that adds into memory the threads share (global or shared): its
        indices do not depend on that axis, so every thread of it runs the whole reduction into the
        same elements at once, and reads what its producer's other threads have not written yet.
        Such a block is what a second `rfactor` leaves when it is computed at the blockIdx loop and
        its loops are not bound: 5 of the 12 numeric mismatches among a CUDA model's
        answers (row sums), and 5 more answers that matched by chance (a few rows
        each). None of the 784 verified CUDA corpus scripts has one, nor any of the pretraining
        records' dlight scripts, design-space samples or samples with an rfactor that were checked
        (benchmarks/results/cpu_racing_reduction.md): where a sampled block adds into memory under
        fewer thread axes than its kernel's, it is a warp's tensor-core fragment
        (`wmma.accumulator`), which is not shared by the warps.
    Only functions with at least one bound loop are looked at (none bound: `check_gpu`'s own message)."""
    return [
        (kind, message) for kind, message, _, any_bound in binding_findings(mod) if any_bound and kind != LAUNCH_LOOP
    ]


def host_blocks(mod) -> list:
    """The names of the blocks that would run on the host (HOST_BLOCK: the outermost block of each
    nest under no bound loop), also in a function where no loop is bound at all."""
    return [block for kind, _, block, _ in binding_findings(mod) if kind == HOST_BLOCK]


def binding_findings(mod) -> list:
    """(kind, message, subject, whether the function binds any loop) per finding; the subject is
    the block's name for HOST_BLOCK, (loop name, extent) for LAUNCH_LOOP, else None."""
    import tvm
    from tvm.s_tir import SBlockRealize

    problems = []
    for _, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        found, any_bound = [], False

        def visit(stmt, axes: dict, under_binding: bool, kernel: dict = None, around: tuple = ()) -> None:
            """`axes`: thread tag -> extent of the bound loops around `stmt` (extent-1 loops left out:
            they are simplified away before the threads are bound, and constrain nothing);
            `kernel`: over the kernel `stmt` is in, "axes": thread tag -> {extent: first loop's name},
            "reductions": (block, the tags of `axes` then, (buffer, scope)) of each reduction block
            that writes memory its threads share;
            `around`: (name, extent) of the loops around `stmt` that stay on the host."""
            nonlocal any_bound
            if isinstance(stmt, tvm.tirx.For):
                if stmt.kind == tvm.tirx.ForKind.THREAD_BINDING and stmt.thread_binding is not None:
                    any_bound = True
                    tag = str(stmt.thread_binding.thread_tag)
                    extent = int(stmt.extent) if isinstance(stmt.extent, tvm.tirx.IntImm) else None
                    if not under_binding:  # the outermost bound loop of a nest: a kernel of its own
                        found.extend((LAUNCH_LOOP, loop, "") for loop in around if loop[1] != 1)
                        kernel = {"axes": {}, "reductions": []}
                        visit(stmt, axes, True, kernel)
                        found.extend((kind, None, message) for kind, message in extent_mismatches(kernel["axes"]))
                        found.extend((RACING_REDUCTION, None, message) for message in racing_reductions(kernel))
                        return
                    outer = axes.get(tag)
                    threads = extent is not None and not tag.startswith("vthread")
                    if threads and outer is not None and extent > outer:
                        found.append(
                            (
                                LOOP_PAST_OUTER,
                                None,
                                f"loop {stmt.loop_var.name} binds {tag} ({extent}) inside a loop "
                                f"bound to {tag} ({outer}): both take the same thread index, so its iterations "
                                f"from {outer} on never run",
                            )
                        )
                    elif threads and extent == 1 and outer is not None:  # (outer > 1: axes holds no 1s)
                        found.append(
                            (
                                LOOP_PAST_OUTER,
                                None,
                                f"loop {stmt.loop_var.name} binds {tag} (1) inside a loop "
                                f"bound to {tag} ({outer}): both take the same thread index, which is not 0 "
                                f"in {outer - 1} of the {outer} threads, so their iterations of it never run",
                            )
                        )
                    elif threads and extent > 1:
                        kernel["axes"].setdefault(tag, {}).setdefault(extent, stmt.loop_var.name)
                    if extent != 1:
                        axes = {**axes, tag: extent}
                elif not under_binding:
                    extent = int(stmt.extent) if isinstance(stmt.extent, tvm.tirx.IntImm) else None
                    around = around + ((stmt.loop_var.name, extent),)
                visit(stmt.body, axes, under_binding, kernel, around)
            elif isinstance(stmt, SBlockRealize):
                block = stmt.block
                if not under_binding and block.name_hint != "root" and (block.iter_vars or block.writes):
                    found.append(
                        (
                            HOST_BLOCK,
                            block.name_hint,
                            f"block {block.name_hint!r} is under no loop bound to "
                            "blockIdx/threadIdx: TVM would run it on the host, which cannot read the GPU's buffers",
                        )
                    )
                    return  # its inner blocks run on the host with it: one message for the nest
                if under_binding and reduce_values(stmt):
                    shared = [
                        (w.source.name, w.source.scope()) for w in block.writes if w.source.scope() in SHARED_SCOPES
                    ]
                    if shared:
                        kernel["reductions"].append((block.name_hint, frozenset(axes), shared[0]))
                if block.init is not None:
                    visit(block.init, axes, under_binding, kernel, around)
                visit(block.body, axes, under_binding, kernel, around)
            elif isinstance(stmt, tvm.tirx.SeqStmt):
                for inner in stmt.seq:
                    visit(inner, axes, under_binding, kernel, around)
            elif isinstance(stmt, tvm.tirx.IfThenElse):
                visit(stmt.then_case, axes, under_binding, kernel, around)
                if stmt.else_case is not None:
                    visit(stmt.else_case, axes, under_binding, kernel, around)
            elif isinstance(getattr(stmt, "body", None), tvm.tirx.Stmt):
                visit(stmt.body, axes, under_binding, kernel, around)

        visit(func.body, {}, False)
        problems += [(kind, message, block, any_bound) for kind, block, message in found]
    return problems
