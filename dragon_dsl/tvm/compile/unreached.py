"""Unwritten slices (`unreached_iterations`): a predicated block that never runs for some values of an
iterator, whose elements another block then reads."""

from __future__ import annotations

from dragon_dsl.tvm.compile.realizes import predicated, reduce_values

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
    never written (2,046 of 2,048 outputs wrong, from a CUDA model's answer). A block
    with no reduction left counts too: the rfactor stage of a 1-long reduction (a 1 x 5,120 column
    sum split by [None, 1024]) writes slice 0 of 1,024 and the write-back sums them all (its
    improvement answer computed wrong sums; the construction matched by chance). dlight's
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
            if (stmt.block.init is not None or not reduce_values(stmt)) and predicated(stmt):
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


def _unguarded_reader(realizes: list, writer: str, written: list, never: set) -> str | None:
    """The first block (not WRITER) with no predicate that reads a buffer of WRITTEN ((buffer, axis)
    pairs) at an index of NEVER on that axis, by the bounds of its iterators' domains; None if none."""
    from tvm.sym import Analyzer

    for realize in realizes:
        block = realize.block
        if block.name_hint == writer or predicated(realize):
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
