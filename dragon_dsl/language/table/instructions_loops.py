"""The loop instructions of the instruction table: making, reordering, binding and marking loops.

Entries in TVM's order of concerns; `instructions` assembles the table from these modules in order.
"""

from __future__ import annotations

from dragon_dsl.language.table.instructions_make import _BLOCK, _LOOP, P, _loop_only
from dragon_dsl.language.table.schema import At, In, Instruction, Results

LOOPS: tuple[Instruction, ...] = (
    # -- loops --------------------------------------------------------------------
    Instruction(
        "split",
        "Split",
        False,
        (
            P("loop", "loop", In(0), doc="The loop to split."),
            P(
                "factors",
                "list[factor]",
                In(1, rest=True),
                doc="Factors, outermost first; at most one None (inferred).",
            ),
            P("preserve_unit_iters", "bool", At(0), default=True, keyword=True, doc="Keep iterators of extent 1."),
            P(
                "disable_predication",
                "bool",
                At(1),
                default=False,
                keyword=True,
                doc="Do not guard an imperfect split with a predicate.",
            ),
        ),
        Results("loop", "factors"),
        None,
        "Split a loop into nested loops.",
        n_attrs=2,
    ),
    Instruction(
        "loop_partition",
        "LoopPartition",
        False,
        (
            P("loop", "loop", In(0), doc="The loop to partition."),
            P("factors", "list[factor]", In(1, rest=True), doc="Sizes of the consecutive parts."),
            P(
                "preserve_unit_iters",
                "bool",
                At(0),
                default=1,
                keyword=True,
                bool_json="int",
                doc="Keep iterators of extent 1.",
            ),
        ),
        Results("loop", "factors", remainder=True),
        None,
        "Partition a loop into consecutive loops.",
        n_attrs=1,
    ),
    Instruction(
        "merge",
        "Merge",
        False,
        (P("loops", "loop", In(0, rest=True), doc="Loops of equal extent to merge."),),
        Results("loop", 1),
        None,
        "Merge loops of the same extent into one.",
    ),
    Instruction(
        "fuse",
        "Fuse",
        False,
        (
            P("loops", "loop", In(0, rest=True), doc="Consecutive loops, outermost first."),
            P(
                "preserve_unit_iters",
                "bool",
                At(0),
                default=1,
                keyword=True,
                bool_json="int",
                doc="Keep iterators of extent 1.",
            ),
        ),
        Results("loop", 1),
        None,
        "Fuse consecutive loops into one.",
        n_attrs=1,
    ),
    Instruction(
        "reorder",
        "Reorder",
        False,
        (P("loops", "loop", In(0, rest=True), doc="Loops in their new order."),),
        Results(),
        None,
        "Reorder loops.",
    ),
    Instruction(
        "reorder_block_iter_var",
        "ReorderBlockIterVar",
        False,
        (
            P("block", "block", In(0), doc=_BLOCK),
            P("new_order", "list[int]", In(1), doc="A permutation of the block's iteration variables."),
        ),
        Results(),
        None,
        "Reorder the iteration variables of a block.",
        n_inputs=2,
    ),
    Instruction(
        "add_unit_loop",
        "AddUnitLoop",
        False,
        (P("target", "block|loop", In(0), doc="A block or a loop."),),
        Results("loop", 1),
        None,
        "Add a loop of extent 1 above a block or loop.",
        n_inputs=1,
    ),
    _loop_only("parallel", "Parallel", "Run a loop's iterations in parallel (CPU threads)."),
    _loop_only("vectorize", "Vectorize", "Vectorize a loop."),
    _loop_only("unroll", "Unroll", "Unroll a loop."),
    Instruction(
        "bind",
        "Bind",
        False,
        (
            P("loop", "loop", In(0), doc=_LOOP),
            P("thread_axis", "thread", At(0), doc='A GPU thread axis, e.g. "threadIdx.x".'),
        ),
        Results(),
        None,
        "Bind a loop to a GPU thread axis.",
        n_inputs=1,
        n_attrs=1,
    ),
)
