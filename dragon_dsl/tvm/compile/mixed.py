"""Mixed loops: a loop that iterates both spatial and reduction iterators of one block (`mixed_loops`);
bound to threads, its threads add into the same outputs at once."""

from __future__ import annotations


def mixed_loops(mod) -> list:
    """The loops that iterate both spatial and reduction iterators of one block, as (block, loop,
    how it runs: a thread tag, "parallel", or "" when serial). TVM's fuse takes a spatial and a
    reduction loop together, and binds the result to threadIdx (as it binds a cross-thread
    reduction's loop; `parallel` it refuses): the loop's threads then add into the same outputs
    at once. Serial, it computes the right result. 5 of a CUDA model's 24 held-out family answers fused a
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
