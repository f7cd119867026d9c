"""The instruction table's reductions, buffer transformations, blockize and tensorize, and annotations.

Entries in TVM's order of concerns; `instructions` assembles the table from these modules in order.
"""

from __future__ import annotations

from dragon_dsl.language.table.instructions_make import P
from dragon_dsl.language.table.schema import At, In, Instruction, Results

BLOCKS: tuple[Instruction, ...] = (
    # -- reductions ---------------------------------------------------------------
    Instruction(
        "decompose_reduction",
        "DecomposeReduction",
        False,
        (
            P("block", "block", In(0), doc="The reduction block."),
            P("loop", "loop", In(1), doc="The loop above which the initialisation goes."),
        ),
        Results("block", 1),
        None,
        "Split a reduction's initialisation into its own block.",
        n_inputs=2,
    ),
    Instruction(
        "rfactor",
        "RFactor",
        False,
        (
            P("loop", "loop", In(0), doc="A reduction loop."),
            P("factor_axis", "int", At(0), doc="Where the new dimension goes in the rfactor buffer."),
        ),
        Results("block", 1),
        None,
        "Factor a reduction over a loop into a separate block.",
        n_inputs=1,
        n_attrs=1,
    ),
    # -- buffers ------------------------------------------------------------------
    Instruction(
        "storage_align",
        "StorageAlign",
        False,
        (
            P("block", "block", In(0), doc="The block that writes the buffer."),
            P("buffer_index", "int", At(0), doc="Which write buffer."),
            P("axis", "int", At(1), doc="The axis to align."),
            P("factor", "int", At(2), doc="The alignment factor."),
            P("offset", "int", At(3), doc="The offset."),
        ),
        Results(),
        None,
        "Pad a buffer's stride: stride % factor == offset.",
        n_inputs=1,
        n_attrs=4,
    ),
    Instruction(
        "set_scope",
        "SetScope",
        False,
        (
            P("block", "block", In(0), doc="The block that writes the buffer."),
            P("buffer_index", "int", At(0), doc="Which write buffer."),
            P("storage_scope", "scope", At(1), doc="The new storage scope."),
        ),
        Results(),
        None,
        "Change a buffer's storage scope.",
        n_inputs=1,
        n_attrs=2,
    ),
    Instruction(
        "unsafe_set_dtype",
        "UnsafeSetDType",
        False,
        (
            P("block", "block", In(0), doc="The block that writes the buffer."),
            P("buffer_index", "int", At(0), doc="Which write buffer."),
            P("dtype", "dtype", At(1), doc="The new data type."),
        ),
        Results(),
        None,
        "Change a buffer's data type (unsafe: no check of the computation).",
        n_inputs=1,
        n_attrs=2,
    ),
    # -- blockize and tensorize ----------------------------------------------------
    Instruction(
        "blockize",
        "Blockize",
        False,
        (
            P("target", "loop|list[block]", In(0), doc="A loop, or a list of blocks."),
            P("preserve_unit_iters", "bool", At(0), default=True, keyword=True, doc="Keep iterators of extent 1."),
        ),
        Results("block", 1),
        None,
        "Turn the subtree under a loop (or some blocks) into one block.",
        n_inputs=1,
        n_attrs=1,
    ),
    Instruction(
        "tensorize",
        "Tensorize",
        False,
        (
            P("target", "block|loop", In(0), doc="A block or a loop."),
            P("tensor_intrin", "str", At(0), doc="The name of a registered tensor intrinsic."),
            P("preserve_unit_iters", "bool", At(1), default=True, keyword=True, doc="Keep iterators of extent 1."),
        ),
        Results(),
        None,
        "Replace a computation by a tensor intrinsic.",
        n_inputs=1,
        n_attrs=2,
    ),
    # -- annotations ----------------------------------------------------------------
    Instruction(
        "annotate",
        "Annotate",
        False,
        (
            P("target", "block|loop", In(0), doc="A block or a loop."),
            P("key", "str", At(0), doc="The annotation key."),
            P("value", "any", In(1), doc="An int, float, bool, string, value, list or dict."),
        ),
        Results(),
        None,
        "Attach an annotation to a block or loop.",
        n_inputs=2,
        n_attrs=1,
    ),
    Instruction(
        "unannotate",
        "Unannotate",
        False,
        (P("target", "block|loop", In(0), doc="A block or a loop."), P("key", "str", At(0), doc="The annotation key.")),
        Results(),
        None,
        "Remove an annotation.",
        n_inputs=1,
        n_attrs=1,
    ),
)
