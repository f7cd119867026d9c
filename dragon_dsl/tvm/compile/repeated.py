"""Repeated work: reductions re-run under loops their iterators do not use (`repeated_reductions`,
refused past REPEATED_WORK_FACTOR times the program's work), and updates run more than once per
initialisation (`repeated_updates`: a wrong result)."""

from __future__ import annotations

import math

from dragon_dsl.tvm.compile.realizes import reduce_values

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


def repeated_reductions(mod) -> list:
    """The reduction blocks that loops around them run again and again, as (block, repeats,
    instances): a loop whose variable none of the block's bindings (nor its predicate) uses runs
    the whole reduction once per iteration. Loops are counted up to the enclosing block."""
    found = []
    for realize, loops in _realizes_with_loops(mod):
        if reduce_values(realize):
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
    predicate): four column-sum improvements a CUDA model wrote for held-out families,
    split [None, 16] and blockized into the reduction, every sum 16 times too large (the verifier
    rejected all four); without the blockize TVM keeps the split's predicate."""

    def first_unread(realize, loops: list):
        used = _read_vars(realize)
        return next(((loop, extent) for loop, extent in loops if extent > 1 and loop not in used), None)

    found = []
    for realize, loops in _realizes_with_loops(mod):
        name = realize.block.name_hint
        reduced = _read_vars(realize, reduce_values(realize))
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
