"""The compile check: what a build compiles, and what TVM 0.27 compiles but cannot run on a GPU.

`schedule` turns a build source into a scheduled IRModule: a trace (checked by the Dragon decoder,
then replayed on a fresh schedule of the workload, exactly as TVM does), a scheduled IRModule
(MetaSchedule's builder inputs), dlight's default GPU rules, or the workload as it is.
`checked_schedule` adds, for GPU targets, the checks TVM 0.27's compile does not make
(`check_gpu`: blocks left on the host, thread loops that cannot run as written, TVM's own
VerifyGPUCode limits). The measurement engine's builder and the model's compile check
(`compile_problem`) both go through `checked_schedule`, so they reject the same scripts.
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

from dragon_dsl.tvm.errors import tvm_message
from dragon_dsl.tvm.target import GPU_KINDS
from dragon_dsl.tvm.trace import apply

#: the version of the checks below (raised whenever one is added or tightened): a build or a
#: measurement the engine's results cache keeps answers a later request only when it passed the
#: checks of this version, so a schedule a new check rejects is built (and rejected) again rather
#: than answered from an earlier success. 2: RACING_REDUCTION. 3: `unreached_iterations`.
#: 4: `repeated_updates`. 5: `unreached_iterations` of blocks with no reduction left.
CHECKS_VERSION = 5


class ReplayError(Exception):
    pass


class BuildError(Exception):
    pass


def schedule(mod, source: dict, target):
    """The scheduled IRModule for a build source; raises ReplayError."""
    import tvm

    if "trace" in source:
        trace = source["trace"]
        _check_trace(trace)
        try:  # apply registers the tensor intrinsics the trace names
            return apply(trace, mod).mod
        except Exception as exc:  # TVM reports replay failures through its own exception types
            raise ReplayError(tvm_message(exc)) from None
    if "module" in source:
        from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

        # what MetaSchedule's default_build does before building
        return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(tvm.ir.load_json(source["module"]))
    if source.get("baseline") == "dlight":
        from tvm.s_tir import dlight as dl

        from dragon_dsl.tvm.dlight import gpu_rules

        # dlight's module pass assigns the scheduled functions into the module it is given:
        # hand it a copy, never the worker's cached workload
        copy = tvm.IRModule({gv.name_hint: func for gv, func in mod.functions_items()}, attrs=mod.attrs)
        with target:
            return dl.ApplyDefaultSchedule(*gpu_rules())(copy)
    if source.get("baseline") == "unscheduled":
        return mod
    raise ValueError(f"unknown build source {sorted(source)}")


def _check_trace(trace) -> None:
    """Reject what TVM would mishandle (out-of-range decisions etc.) before replaying it."""
    from dragon_dsl.language.codec.decode import decode

    try:
        script, diags = decode(trace)
    except Exception as exc:  # the decoder promises diagnostics, but a bad trace must never kill a worker
        raise ReplayError(f"trace rejected: {type(exc).__name__}: {exc}") from None
    if script is None:
        errors = [d.render("<trace>") for d in diags]
        raise ReplayError("trace rejected: " + " | ".join(errors[:3]))


#: kinds of `thread_binding_problems`
HOST_BLOCK = "host_block"
LOOP_PAST_OUTER = "thread_loop_past_outer"
EXTENT_MISMATCH = "thread_extent_mismatch"
#: not a problem of correctness (`thread_binding_problems` leaves it out): see `launch_loops`
LAUNCH_LOOP = "launch_loop"
RACING_REDUCTION = "racing_reduction"
#: the memory scopes every thread of a block (of threads) reads and writes alike: a thread's own
#: `local`, a warp's `warp` and `wmma.*` fragments are not among them
SHARED_SCOPES = frozenset({"global", "shared", "shared.dyn"})


def thread_binding_problems(mod) -> list:
    """What TVM 0.27 compiles without complaint but cannot run correctly on a GPU, as (kind, message):
      * HOST_BLOCK: a block (other than the root) under no loop bound to blockIdx/threadIdx/vthread:
        SplitHostDevice leaves it in the host function, which then reads the GPU's buffers from the
        CPU (a segfault, measured on the H200; neither VerifyMemory nor VerifyGPUCode objects);
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
        failed on the H200; in none of the 784 verified corpus scripts;
      * RACING_REDUCTION: a reduction block in a kernel with threads, under no loop bound to one of
        the kernel's threadIdx axes, that adds into memory the threads share (global or shared): its
        indices do not depend on that axis, so every thread of it runs the whole reduction into the
        same elements at once, and reads what its producer's other threads have not written yet.
        Such a block is what a second `rfactor` leaves when it is computed at the blockIdx loop and
        its loops are not bound: 5 of the 12 numeric mismatches among the second-generation model's
        answers on the H200 (row sums), and 5 more answers that matched by chance (a few rows
        each). None of the 784 verified CUDA corpus scripts has one, nor any of the pretraining
        records' dlight scripts, design-space samples or samples with an rfactor that were checked
        (benchmarks/results/cpu_racing_reduction.md): where a sampled block adds into memory under
        fewer thread axes than its kernel's, it is a warp's tensor-core fragment
        (`wmma.accumulator`), which is not shared by the warps.
    Only functions with at least one bound loop are looked at (none bound: `check_gpu`'s own message)."""
    return [
        (kind, message) for kind, message, _, any_bound in _binding_findings(mod) if any_bound and kind != LAUNCH_LOOP
    ]


def host_blocks(mod) -> list:
    """The names of the blocks that would run on the host (HOST_BLOCK: the outermost block of each
    nest under no bound loop), also in a function where no loop is bound at all."""
    return [block for kind, _, block, _ in _binding_findings(mod) if kind == HOST_BLOCK]


def launch_loops(mod) -> list:
    """The loops of more than one iteration around a kernel, as (loop name, extent or None when not a
    constant), outermost first, each once: a loop that encloses a nest's outermost bound loop stays on
    the host, which launches the kernel once per iteration. TVM compiles and runs that correctly,
    but slowly: a second-generation model's reductions kept `for j_0 in range(134)` or
    `for ax0 in range(4096)` around their bound loops and ran 6-4,800x slower than dlight. Neither
    MetaSchedule (AutoBind fuses and binds a block's outer loops) nor dlight writes such a loop."""
    return list(dict.fromkeys(loop for kind, _, loop, _ in _binding_findings(mod) if kind == LAUNCH_LOOP))


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


def _binding_findings(mod) -> list:
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
                        found.extend((kind, None, message) for kind, message in _extent_mismatches(kernel["axes"]))
                        found.extend((RACING_REDUCTION, None, message) for message in _racing_reductions(kernel))
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
                if under_binding and _reduce_values(stmt):
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


def _extent_mismatches(kernel: dict) -> list:
    """EXTENT_MISMATCH problems of one kernel (thread tag -> {extent: first loop bound with it})."""
    out = []
    for tag, loops in kernel.items():
        if len(loops) > 1:
            (e1, n1), (e2, n2) = list(loops.items())[:2]
            out.append(
                (
                    EXTENT_MISMATCH,
                    f"{tag} is bound with extent {e1} (loop {n1}) and {e2} (loop {n2}) in one "
                    f"kernel: a kernel has one block shape, which TVM takes from one of them, so "
                    f"the other loop runs with the wrong number of threads",
                )
            )
    return out


def _racing_reductions(kernel: dict) -> list:
    """RACING_REDUCTION messages of one kernel ({"axes": thread tag -> {extent: first loop bound
    with it}, "reductions": (block, the thread tags around it, (buffer, scope) it writes)}), a
    block once."""
    threads = {tag for tag in kernel["axes"] if tag.startswith("threadIdx")}
    out, seen = [], set()
    for block, around, (buffer, scope) in kernel["reductions"]:
        missing = sorted(threads - around)
        if missing and block not in seen:
            seen.add(block)
            axes = " or ".join(missing)
            out.append(
                f"block {block!r} adds into {buffer} ({scope} memory) under no loop bound to {axes}: every "
                f"thread of its kernel on {'those axes' if len(missing) > 1 else 'that axis'} runs the whole "
                f"reduction into the same elements at once, reading values other threads have not written "
                f"yet (a race); bind its loops to those threads as well (a cross-thread reduction) or give "
                f"it a kernel of its own"
            )
    return out


def mixed_loops(mod) -> list:
    """The loops that iterate both spatial and reduction iterators of one block, as (block, loop,
    how it runs: a thread tag, "parallel", or "" when serial). TVM's fuse takes a spatial and a
    reduction loop together, and binds the result to threadIdx (as it binds a cross-thread
    reduction's loop; `parallel` it refuses): the loop's threads then add into the same outputs
    at once. Serial, it computes the right result. 5 of the seventh CUDA model's 24 held-out family answers fused a
    row sum's two loops and bound the result to threadIdx.x: they built, and left 3 of 4 to 127 of
    128 outputs unwritten. None of 300 training scripts (dlight's and MetaSchedule's) has one."""
    import tvm
    from tvm.s_tir import SBlockRealize

    from dragon_dsl.tvm.blocks import walk

    found = []
    for _, func in mod.functions_items():
        if not isinstance(func, tvm.tirx.PrimFunc):
            continue
        runs: dict = {}  # loop variable name -> how its loop runs

        def visit(node) -> None:
            if isinstance(node, tvm.tirx.For):
                bound = node.kind == tvm.tirx.ForKind.THREAD_BINDING and node.thread_binding is not None
                runs[node.loop_var.name] = (
                    str(node.thread_binding.thread_tag)
                    if bound
                    else "parallel"
                    if node.kind == tvm.tirx.ForKind.PARALLEL
                    else ""
                )
            elif isinstance(node, SBlockRealize):
                spatial, reduction = set(), set()
                for iv, value in zip(node.block.iter_vars, node.iter_values):
                    used = {v.name for v in tvm.tirx.analysis.undefined_vars(value)}
                    if iv.iter_type == tvm.tirx.IterVar.DataPar:
                        spatial |= used
                    elif iv.iter_type == tvm.tirx.IterVar.CommReduce:
                        reduction |= used
                found.extend((node.block.name_hint, loop, runs.get(loop, "")) for loop in sorted(spatial & reduction))

        walk(func.body, visit)
    return found


_ACCESS_PATH = re.compile(r"Access path: <root>(\S+)")
_PATH_STEP = re.compile(r'\.(\w+)(?:\[(?:I\.GlobalVar\("([^"]+)"\)|(\d+))\])?')
_OOB_MESSAGE = re.compile(r"Out of bounds memory access on buffer .*")


def out_of_bounds(mod) -> list:
    """The accesses in the bodies of unpredicated blocks that TVM's out-of-bounds checker finds
    outside their buffers, as its messages (`index ... with bounds [-3, 1026] is outside the range [0, 1024]`).
    The checker reads a block's `where` predicate as no bound, so accesses a predicate guards (the
    padded write-back blocks of 9 of 304 CUDA corpus labels, all verified on the H200) are left out:
    each finding's access path is followed to its block, and only unpredicated blocks count. A
    conv1d answer of the eighth CUDA model inlined the padding into the convolution and then
    reindexed its input: the reindex block copied `inputs[l + k - 3]` for every l and k, with no
    condition, and the kernel stopped the GPU with an illegal address. Blocks run for iterator values
    outside their domain count too (`out_of_domain_bindings`)."""
    return _checker_findings(mod) + out_of_domain_bindings(mod)


def _checker_findings(mod) -> list:
    """TVM's out-of-bounds checker's findings in unpredicated blocks (`out_of_bounds`)."""
    from tvm.s_tir import analysis

    try:
        analysis.OOBChecker()(mod)
        return []
    except Exception as e:
        text = str(e)
    # a block's read and write regions are its signature, which TVM widens over a padded input
    # that its body reads under a condition (43 of 1,726 corpus scripts, llvm convolutions that
    # inline their padding, all verified): only the accesses themselves count
    unguarded = [
        path
        for path in _ACCESS_PATH.findall(text)
        if ".reads[" not in path and ".writes[" not in path and not _guarded(mod, path)
    ]
    if not unguarded:
        return []
    return _OOB_MESSAGE.findall(text) or [f"an access at {unguarded[0]} is out of bounds"]


def out_of_domain_bindings(mod) -> list:
    """Unpredicated blocks whose loops bind an iterator to values outside its domain, as messages
    (`block 'Y' binds v0 to 0..15 but its domain is 0..7`). The block's body then runs for those
    values too, and TVM's out-of-bounds checker, which reads an iterator as its domain, does not see
    the accesses it makes. TVM 0.27's `rfactor` of a block split with padding (`T.where(i < 8)`)
    keeps the predicate on the rfactor block and leaves the write-back block without it: a
    held-out row sum of the CUDA model wrote Y[8..15] of an 8-element Y and gave wrong results on
    the H200. Loops with extents that are not constants bound nothing here."""
    import tvm
    from tvm.s_tir import SBlockRealize
    from tvm.sym import Analyzer
    from tvm.tirx.analysis import undefined_vars

    from dragon_dsl.tvm.blocks import walk

    found = []
    known: set = set()  # loop variables of constant range, bound in the analyzer

    def visit(stmt) -> None:  # pre-order (`walk`): a loop is bound before the blocks under it
        if isinstance(stmt, tvm.tirx.For):
            if isinstance(stmt.min, tvm.tirx.IntImm) and isinstance(stmt.extent, tvm.tirx.IntImm):
                analyzer.bind(stmt.loop_var, tvm.ir.Range.from_min_extent(stmt.min, stmt.extent))
                known.add(stmt.loop_var)
        elif isinstance(stmt, SBlockRealize):
            block = stmt.block
            if not _predicated(stmt) and not len(block.match_buffers):
                for iv, value in zip(block.iter_vars, stmt.iter_values):
                    if not (isinstance(iv.dom.min, tvm.tirx.IntImm) and isinstance(iv.dom.extent, tvm.tirx.IntImm)):
                        continue
                    if any(v not in known for v in undefined_vars(value)):  # a symbolic extent: no bound
                        continue
                    lo, hi = int(iv.dom.min), int(iv.dom.min) + int(iv.dom.extent) - 1
                    bound = analyzer.const_int_bound(value)
                    if bound.min_value < lo or bound.max_value > hi:
                        found.append(
                            f"block {block.name_hint!r} binds {iv.var.name} to {bound.min_value}..{bound.max_value} "
                            f"but its domain is {lo}..{hi}"
                        )

    for _, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            analyzer = Analyzer()  # loop variables are distinct objects: one analyzer a function
            walk(func.body, visit)
    return found


#: `unreached_iterations` tries every value of an iterator domain up to this size, else its two ends
UNREACHED_VALUES = 64


def unreached_iterations(mod) -> list:
    """Predicated reduction blocks (their init inside), and predicated blocks with no reduction, that
    never write some elements another block then reads, as (block,
    iterator, the values never run, domain extent, the block reading them): the predicate is false
    there whatever the other loops' values, so the elements the block writes at those values of a
    spatial iterator are never written, not even by its init, and a block with no predicate of its
    own reads them. TVM 0.27's `rfactor` of a reduction split with padding does this: a row sum of
    5,120 split into [None, 1024, 1024], its middle loop split again by 8 and rfactored, adds its
    rows into slice 0 of an 8-slice buffer only; the write-back block sums all 8 slices, 7 of them
    never written (2,046 of 2,048 outputs wrong on the H200, from a CUDA model's answer). A block
    with no reduction left counts too: the rfactor stage of a 1-long reduction (a 1 x 5,120 column
    sum split by [None, 1024]) writes slice 0 of 1,024 and the write-back sums them all (its
    improvement answer computed wrong sums on an H100; the construction matched by chance). dlight's
    pooling leaves such slices to an init block of their own, which has no predicate. Only iterators
    bound to one loop with constant bounds, and written at an index of their own, are tried (those
    of an rfactor stage); each value up to UNREACHED_VALUES of them, else the domain's two ends."""
    import tvm
    from tvm.s_tir import SBlockRealize

    from dragon_dsl.tvm.blocks import children

    unwritten, realizes = [], []

    def visit(stmt, loops: dict) -> None:
        if isinstance(stmt, tvm.tirx.For):
            if isinstance(stmt.min, tvm.tirx.IntImm) and isinstance(stmt.extent, tvm.tirx.IntImm):
                loops = {**loops, stmt.loop_var: stmt}
        elif isinstance(stmt, SBlockRealize):
            realizes.append(stmt)
            # a block with its init inside: the init runs under the predicate too (dlight's reductions
            # initialise in a block of their own, with no predicate); or a block with no reduction
            # left: the rfactor stage of a 1-long reduction, all of its iterators spatial
            if (stmt.block.init is not None or not _reduce_values(stmt)) and _predicated(stmt):
                for iv, value in zip(stmt.block.iter_vars, stmt.iter_values):
                    if (
                        iv.iter_type != tvm.tirx.IterVar.DataPar
                        or not isinstance(value, tvm.tirx.Var)
                        or value not in loops
                    ):
                        continue
                    written = [
                        (w.source, axis)
                        for w in stmt.block.writes
                        for axis, r in enumerate(w.region)
                        if r.min.same_as(iv.var)
                    ]
                    never = _never_run(stmt.predicate, value, loops) if written else []
                    if never:
                        unwritten.append((stmt.block.name_hint, iv.var.name, never, int(loops[value].extent), written))
        for child in children(stmt):
            visit(child, loops)

    for _, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            visit(func.body, {})
    found = []
    for block, name, never, extent, written in unwritten:
        reader = _unguarded_reader(realizes, block, written, set(never))
        if reader is not None:
            found.append((block, name, never, extent, reader))
    return found


def _predicated(realize) -> bool:
    """Whether a block realize has a `where` predicate (anything but the constant true)."""
    import tvm

    pred = realize.predicate
    return not (isinstance(pred, tvm.tirx.IntImm) and pred.value == 1)


def _unguarded_reader(realizes: list, writer: str, written: list, never: set) -> str | None:
    """The first block (not WRITER) with no predicate that reads a buffer of WRITTEN ((buffer, axis)
    pairs) at an index of NEVER on that axis, by the bounds of its iterators' domains; None if none."""
    from tvm.sym import Analyzer

    for realize in realizes:
        block = realize.block
        if block.name_hint == writer or _predicated(realize):
            continue
        for read in block.reads:
            for buffer, axis in written:
                if not read.source.same_as(buffer):
                    continue
                analyzer = Analyzer()
                for iv in block.iter_vars:
                    analyzer.bind(iv.var, iv.dom)
                lo = analyzer.const_int_bound(read.region[axis].min).min_value
                hi = analyzer.const_int_bound(read.region[axis].min + read.region[axis].extent - 1).max_value
                if any(lo <= x <= hi for x in never):
                    return block.name_hint
    return None


def _never_run(pred, var, loops: dict) -> list:
    """The values of loop variable VAR (its loop in LOOPS) for which PRED is false whatever the
    other LOOPS' variables are."""
    import tvm
    from tvm.sym import Analyzer

    loop = loops[var]
    lo, n = int(loop.min), int(loop.extent)
    values = range(lo, lo + n) if n <= UNREACHED_VALUES else sorted({lo, lo + n - 1})
    never = []
    for x in values:
        analyzer = Analyzer()
        for other, around in loops.items():
            if not other.same_as(var):
                analyzer.bind(other, tvm.ir.Range.from_min_extent(around.min, around.extent))
        analyzer.bind(var, tvm.tirx.const(x, str(loop.extent.ty)))
        if analyzer.can_prove(tvm.tirx.Not(pred)):
            never.append(x)
    return never


def unreached_message(found: list) -> str | None:
    """What `unreached_iterations` found, said for the script's author, or None."""
    if not found:
        return None
    block, name, never, extent, reader = found[0]
    shown = ", ".join(map(str, never[:4])) + (", ..." if len(never) > 4 else "")
    return (
        f"block {block!r} never runs for {name} = {shown} ({len(never)} of its {extent} values): its "
        f"predicate is false there whatever the other loops are, so the elements it writes there are never "
        f"written, and block {reader!r} reads them (garbage); this is what an rfactor of a split padded past "
        f"its extent leaves: split within the extent, or rfactor a loop the padding does not cut off"
    )


#: steps of an access path into a call's arguments (`if_then_else`'s branches) or a conditional
#: statement's branches: the checker does not bound an access by the condition around it (a
#: transposed convolution's input read under `(h + rh) % 2 == 0 and 1 <= (h + rh) // 2 < 9`)
_CONDITIONAL = frozenset({"args", "then_case", "else_case"})


def _guarded(mod, path: str) -> bool:
    """Whether the access at PATH (an access path of TVM's diagnostics) is not counted: under a
    condition (`_CONDITIONAL`), in a block with a `where` predicate or matched buffers (a tensor
    intrinsic's body), or on a path that reaches no block."""
    from tvm.s_tir import SBlockRealize

    steps = _PATH_STEP.findall(path)
    if any(attr in _CONDITIONAL for attr, _, _ in steps):
        return True
    node, realize = mod, None
    for attr, func, index in steps:
        try:
            if attr == "functions":
                node = mod[func]
                continue
            node = getattr(node, attr)
            if index:
                node = node[int(index)]
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            break  # inside the access's expressions: the block around it is known by now
        if isinstance(node, SBlockRealize):
            realize = node
    if realize is None or len(realize.block.match_buffers):
        # a tensorized block's body is its intrinsic's implementation, which addresses the buffers
        # it matches in its own way (an AVX-512 dot product reads a 16 x 4 tile as one 64-lane vector)
        return True
    return _predicated(realize)


def out_of_bounds_message(found: list) -> str | None:
    """What `out_of_bounds` found, said for the script's author, or None."""
    if not found:
        return None
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    what = found[0].removeprefix("Out of bounds memory access on ").replace(". index", ": index").rstrip(".")
    return f"the schedule reads or writes outside a buffer, with no condition around the access: {what}{more}"


def mixed_loop_message(found: list) -> str | None:
    """What `mixed_loops` found, said for the script's author (the first finding), or None."""
    if not found:
        return None
    block, loop, how = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    runs = f"bound to {how}" if how and how != "parallel" else how or "serial"
    return (
        f"loop {loop} ({runs}) iterates both spatial and reduction iterators of block {block!r}{more}: "
        "fuse spatial loops with spatial loops and reduction loops with reduction loops"
    )


#: a schedule whose reductions re-run (under loops their bindings do not use) more than this many
#: times the unscheduled program's block instances does far more arithmetic than the program: the
#: llvm model computed a softmax's row maxima for all 6,975 rows inside each of 111,600 iterations
#: of another block's loops (27,900x the program's work, 6,000x slower). MetaSchedule recomputes a
#: reduction only where that stays cheap in what it keeps: of the 1,210 llvm and CUDA training
#: labels, a layer norm's variance re-run per output element comes to 21x (statement by statement
#: too), and no other label re-runs one. Its random samples do: 13 of the 334 sampled llvm softmax
#: candidates in tests/data/traces end at 128-288x. At 1,000x instead (tried), a held-out RMSNorm's
#: `dragon suggest` got a candidate 414x slower than the program, which ran until its time limit
REPEATED_WORK_FACTOR = 100


def block_instances(mod) -> int:
    """The block instances of a module's blocks, each block's iteration domain once (the root
    block left out): the work of the program as written."""
    import tvm
    from tvm.s_tir import SBlockRealize

    from dragon_dsl.tvm.blocks import walk

    total = 0

    def visit(node) -> None:
        nonlocal total
        if isinstance(node, SBlockRealize) and node.block.iter_vars:
            total += _domain(node.block)

    for _, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            walk(func.body, visit)
    return total


def _domain(block) -> int:
    size = 1
    for iv in block.iter_vars:
        size *= int(iv.dom.extent) if hasattr(iv.dom.extent, "value") else 1
    return size


def _realizes_under(node, deep: bool = True):
    """(block realize, the loops above it up to the enclosing block as (name, extent)) of every block
    under NODE, outermost first; with DEEP off, not the blocks inside those."""
    import tvm
    from tvm.s_tir import SBlockRealize

    from dragon_dsl.tvm.blocks import children

    def visit(node, loops: list):
        if isinstance(node, tvm.tirx.For):
            extent = node.extent.value if hasattr(node.extent, "value") else 1
            loops = loops + [(node.loop_var.name, extent)]
        elif isinstance(node, SBlockRealize):
            yield node, loops
            if not deep:
                return
            loops = []
        for child in children(node):
            yield from visit(child, loops)

    yield from visit(node, [])


def _realizes_with_loops(mod):
    """`_realizes_under` every function of MOD."""
    import tvm

    for _, func in mod.functions_items():
        if isinstance(func, tvm.tirx.PrimFunc):
            yield from _realizes_under(func.body)


def _read_vars(realize, values=None) -> set:
    """The names of the variables VALUES (default: the realize's bindings and predicate) read."""
    import tvm

    used = set()
    for value in [*realize.iter_values, realize.predicate] if values is None else values:
        used |= {v.name for v in tvm.tirx.analysis.undefined_vars(value)}
    return used


def _reduce_values(realize) -> list:
    """The bindings of a block realize's reduction iterators."""
    import tvm

    return [
        value
        for iv, value in zip(realize.block.iter_vars, realize.iter_values)
        if iv.iter_type == tvm.tirx.IterVar.CommReduce
    ]


def repeated_reductions(mod) -> list:
    """The reduction blocks that loops around them run again and again, as (block, repeats,
    instances): a loop whose variable none of the block's bindings (nor its predicate) uses runs
    the whole reduction once per iteration. Loops are counted up to the enclosing block."""
    found = []
    for realize, loops in _realizes_with_loops(mod):
        if _reduce_values(realize):
            used = _read_vars(realize)
            repeats = math.prod(extent for name, extent in loops if name not in used)
            if repeats > 1:
                found.append((realize.block.name_hint, repeats, repeats * _domain(realize.block)))
    return found


def repeated_updates(mod) -> list:
    """The updates of a reduction that run more than once per initialisation, as (reduction block,
    updating block, loop, extent): a loop longer than 1 whose variable no binding or predicate of
    the updating block reads, and that lies either inside a loop a reduction iterator of the block
    reads (the same instance runs again before the next one: its values are added again) or inside
    the body of a reduction block, under its init (a blockized reduction: its inner block's update
    repeats). Either way the result is wrong, on any target. A loop outside every reduction loop
    runs the whole reduction again, init included: correct, only slower (`repeated_reductions`).
    What a split of `add_unit_loop`'s loop does (no block iterator reads it, so TVM writes no
    predicate): four column-sum improvements of the twelfth CUDA model on the held-out families,
    split [None, 16] and blockized into the reduction, every sum 16 times too large (the verifier
    rejected all four); without the blockize TVM keeps the split's predicate."""

    def first_unread(realize, loops: list):
        used = _read_vars(realize)
        return next(((loop, extent) for loop, extent in loops if extent > 1 and loop not in used), None)

    found = []
    for realize, loops in _realizes_with_loops(mod):
        name = realize.block.name_hint
        reduced = _read_vars(realize, _reduce_values(realize))
        first = next((i for i, (loop, _) in enumerate(loops) if loop in reduced), None)
        unread = first_unread(realize, loops[first + 1 :]) if first is not None else None
        if unread:
            found.append((name, name, *unread))
        if realize.block.init is not None:
            # the blocks directly under a reduction block's body: each must read every loop above it there
            for inner, inner_loops in _realizes_under(realize.block.body, deep=False):
                unread = first_unread(inner, inner_loops)
                if unread:
                    found.append((name, inner.block.name_hint, *unread))
    return found


def repeated_update_message(found: list) -> str | None:
    """What `repeated_updates` found, said for the script's author, or None."""
    if not found:
        return None
    outer, block, loop, extent = found[0]
    where = f"block {block!r}" + (f" (inside reduction {outer!r})" if block != outer else "")
    return (
        f"{where} runs each update {extent} times per initialisation under loop {loop}, which its "
        f"bindings do not read: the same values are added {extent} times (a wrong result); split only "
        f"loops a block iterator reads, or keep a unit loop's split at 1"
    )


def repeated_work_message(mod, program) -> str | None:
    """Why MOD's re-run reductions are refused next to PROGRAM (the workload as written), or None
    when they come to at most REPEATED_WORK_FACTOR times its block instances."""
    found = repeated_reductions(mod)
    if not found:  # most states: the program's own work is not needed
        return None
    work, repeated = block_instances(program), sum(f[2] for f in found)
    if not work or repeated <= REPEATED_WORK_FACTOR * work:
        return None
    block, repeats, _ = max(found, key=lambda f: f[2])
    ratio = repeated / work
    return (
        f"block {block!r} runs its whole reduction {repeats:,} times, under loops its iterators do "
        f"not use: the schedule's reductions do {ratio:,.0f}x the program's work; compute it at a "
        "loop its iterators depend on"
    )


def check_gpu(mod, target):
    """Raise BuildError when the module runs (partly) on the host or breaks the target's limits;
    returns the module lowered by TVM's default TIR pipeline (what the limits were checked on)."""
    import tvm
    import tvm_ffi

    problems = thread_binding_problems(mod)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BuildError(problems[0][1] + more)

    pipeline, _, _ = tvm.tirx.get_default_tir_pipeline(target)
    lowered = pipeline(tvm.tirx.transform.BindTarget(_bound_target(target))(mod))
    constraints = {
        "max_shared_memory_per_block": int(target.attrs["max_shared_memory_per_block"]),
        "max_threads_per_block": int(target.attrs["max_threads_per_block"]),
        "max_vthread": 8,
        "max_vector_bytes": 16,
    }
    verify = tvm_ffi.get_global_func("s_tir.transform.VerifyGPUCode")(constraints)
    try:
        verify(lowered)
    except Exception as exc:  # TVM raises its own error type with the violated limits
        raise BuildError(tvm_message(exc)) from None
    kinds = {str(f.attrs["target"].kind.name) for f in lowered.functions.values() if f.attrs and "target" in f.attrs}
    if not kinds & {str(target.kind.name)}:
        raise BuildError(
            "no GPU kernel was generated: no loop is bound to blockIdx/threadIdx, "
            "so TVM compiled the whole function for the host"
        )
    return lowered


def _bound_target(target):
    """The target `tvm.tirx.build` binds to a module before its TIR pipeline: TARGET with its own
    host, else llvm (c where TVM has no llvm); a CPU target is its own host."""
    import tvm
    from tvm.runtime import enabled
    from tvm_ffi import DLDeviceType

    if target.host is not None:
        return target.with_host(target.host)
    if target.get_target_device_type() == DLDeviceType.kDLCPU:
        return target.with_host(target)
    return target.with_host(tvm.target.Target("llvm" if enabled("llvm") else "c"))


def compile_scheduled(scheduled, target, lowered=None):
    """`tvm.compile(scheduled, target)`. With LOWERED (what `check_gpu` made of SCHEDULED: the
    default TIR pipeline on the module bound as `tvm.tirx.build` binds it) only the rest of
    `tvm.tirx.build` runs (host/device split, finalizing passes, codegen), so a GPU candidate is
    lowered once, not twice; the generated source is the same (tests/tvm/test_compile_lowered.py)."""
    import tvm

    if lowered is None:
        return tvm.compile(scheduled, target)
    from tvm.driver.build_module import Executable
    from tvm.tirx.build import split_host_device_mods, tir_to_runtime

    _, finalize_host, finalize_device = tvm.tirx.get_default_tir_pipeline(target)
    host_mod, device_mods = split_host_device_mods(lowered)
    host_mod = finalize_host()(host_mod)
    device_mods = {t: finalize_device()(m) for t, m in device_mods.items()}
    return Executable(tir_to_runtime(host_mod, device_mods, _bound_target(target).host))


def checked_schedule(mod, source: dict, target, phases=None):
    """`schedule`, then for a GPU `check_gpu`: what every build compiles (alone or in a group).
    PHASES (a dict), when given, gets the seconds of "replay" and "checks" added, and "lowered":
    the module `check_gpu` lowered (GPU targets only)."""
    t0 = time.perf_counter()
    try:
        scheduled = schedule(mod, source, target)
    finally:
        add_seconds(phases, "replay", time.perf_counter() - t0)
    return check_scheduled(scheduled, target, phases)


def check_scheduled(scheduled, target, phases=None):
    """The checks of `checked_schedule` on a module already scheduled; returns it. PHASES as there."""
    racing = [m for m in mixed_loops(scheduled) if m[2]]
    if racing:  # any target: parallel threads add into the same outputs at once
        raise BuildError(mixed_loop_message(racing) + "; its threads race on the block's outputs")
    unreached = unreached_message(unreached_iterations(scheduled))
    if unreached:  # any target: elements left unwritten, then read
        raise BuildError(unreached)
    repeated = repeated_update_message(repeated_updates(scheduled))
    if repeated:  # any target: values added more than once
        raise BuildError(repeated)
    if str(target.kind.name) in GPU_KINDS:
        t1 = time.perf_counter()
        try:
            lowered = check_gpu(scheduled, target)  # before compiling: TVM's own words for a broken limit
        finally:
            add_seconds(phases, "checks", time.perf_counter() - t1)
        if phases is not None:
            phases["lowered"] = lowered
    return scheduled


def add_seconds(phases, name: str, seconds: float) -> None:
    """Add SECONDS to phase NAME of PHASES (a dict of phase timings; None: nothing is timed)."""
    if phases is not None:
        phases[name] = phases.get(name, 0.0) + seconds


def compile_checked(mod, source: dict, target):
    """The executable of one build source: `checked_schedule`, then `tvm.compile` (which, on a
    machine without a GPU, stops at the CUDA source). Raises ReplayError, BuildError, or TVM's own
    error for a lowering or codegen failure."""
    phases: dict = {}
    scheduled = checked_schedule(mod, source, target, phases)
    return compile_scheduled(scheduled, target, phases.get("lowered"))


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
#: of the 74 held-out workloads; the second-generation model's reductions launched 1 to 224 and ran
#: 16,384 to 84 million iterations per thread, 6-7,500x slower than dlight. 5 of the 784 measured
#: CUDA corpus scripts are such kernels (one a GEMV at 2.5 ms), and 12% of MetaSchedule's random
#: design-space samples.
IDLE_THREADS = 128
IDLE_SERIAL = 16384


#: `starved_kernels`: a block of the workload whose iterations keep at most IDLE_THREADS threads busy
#: (its domain over the iterations each thread runs), each running at least STARVED_SERIAL in sequence,
#: whatever the number of threads launched: a 1 x 15,244 row sum split into [None, 256] launches 256
#: threads of which one has work (558 us, dlight 2.3 us). Of the seventh CUDA model's verified answers
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


def compile_problem(trace: list, workload, target: Any) -> str | None:
    """Why TVM's compiler rejects trace JSON on WORKLOAD (anything `load_workload` takes) for TARGET
    (a tag, a target dict or a Target) before anything runs, or None: the replayed schedule is
    checked (for a GPU: host stages, thread extents, the target's limits) and compiled (to CUDA
    source for a GPU; no GPU, no nvcc). The engine's build does the same and then compiles the source."""
    from dragon_dsl.tvm.target import tvm_target
    from dragon_dsl.tvm.workload import load_workload

    try:
        compile_checked(load_workload(workload), {"trace": trace}, tvm_target(target))
    except (ReplayError, BuildError) as exc:
        return str(exc)
    except Exception as exc:
        return tvm_message(exc)
    return None
