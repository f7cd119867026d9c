"""The layout instructions of the instruction table and the postprocessing section marker.

Entries in TVM's order of concerns; `instructions` assembles the table from these modules in order.
"""

from __future__ import annotations

from dragon_dsl.language.table.instructions_make import _BLOCK, P
from dragon_dsl.language.table.schema import At, In, Instruction, Results

LAYOUTS: tuple[Instruction, ...] = (
    # -- layouts ----------------------------------------------------------------------
    Instruction(
        "transform_layout",
        "TransformLayout",
        False,
        (
            P("block", "block", In(0), doc="A block that accesses the buffer."),
            P("buffer", "buffer", At((0, 1)), doc="read(i) or write(i)."),
            P("index_map", "index_map", In(1), doc="The new layout, e.g. lambda i, j: (i // 16, j, i % 16)."),
            P("pad_value", "index_map?", At(2), default=None, keyword=True, doc="Value of padding elements, or None."),
            P(
                "assume_injective_transform",
                "bool",
                At(3),
                default=False,
                keyword=True,
                doc="Skip the injectivity check.",
            ),
        ),
        Results(),
        None,
        "Change a buffer's layout.",
        n_inputs=2,
        n_attrs=4,
    ),
    Instruction(
        "transform_block_layout",
        "TransformBlockLayout",
        False,
        (
            P("block", "block", In(0), doc=_BLOCK),
            P("index_map", "index_map", At(0), doc="Maps the block's iteration variables to new ones."),
        ),
        Results(),
        None,
        "Change the iteration space of a block.",
        n_inputs=1,
        n_attrs=1,
    ),
    Instruction(
        "decompose_padding",
        "DecomposePadding",
        False,
        (
            P("block", "block", In(0), doc="The padding block."),
            P("loop", "loop", In(1), doc="The loop above which the padding fill goes."),
        ),
        Results("block", 1),
        None,
        "Split a padding block into a fill and a copy.",
        n_inputs=2,
    ),
    Instruction(
        "pad_einsum",
        "PadEinsum",
        False,
        (
            P("block", "block", In(0), doc="An einsum-like block."),
            P("padding", "list[int]", At(0), doc="Padding of each iteration variable."),
        ),
        Results(),
        None,
        "Pad the iteration domain of an einsum block.",
        n_inputs=1,
        n_attrs=1,
    ),
    Instruction(
        "rolling_buffer",
        "RollingBuffer",
        False,
        (P("block", "block", In(0), doc=_BLOCK), P("write_buffer_index", "int", At(0), doc="Which write buffer.")),
        Results(),
        None,
        "Turn a buffer into a rolling (circular) buffer.",
        n_inputs=1,
        n_attrs=1,
    ),
    Instruction(
        "unsafe_hide_buffer_access",
        "UnsafeHideBufferAccess",
        False,
        (
            P("block", "block", In(0), doc=_BLOCK),
            P("buf_type", "buffer_kind", In(1), doc='"read" or "write".'),
            P("buf_index_array", "list[int]", In(2), doc="Indices of the buffers to hide."),
        ),
        Results(),
        None,
        "Hide buffer accesses from the block's signature (unsafe).",
        n_inputs=3,
    ),
    Instruction(
        "annotate_buffer_access",
        "AnnotateBufferAccess",
        False,
        (
            P("block", "block", In(0), doc=_BLOCK),
            P("buffer", "buffer", In((1, 2)), doc="read(i) or write(i)."),
            P("gen_new_ranges", "index_map", In(3), doc="Maps iteration variables to the accessed ranges."),
        ),
        Results(),
        None,
        "Declare the region a block accesses in a buffer.",
        n_inputs=4,
    ),
    # -- postprocessing ----------------------------------------------------------------
    Instruction(
        "enter_postproc",
        "EnterPostproc",
        False,
        (),
        Results(),
        None,
        "Start the postprocessing section: instructions that MetaSchedule's postprocessors added.",
        n_inputs=0,
        section="postproc",
    ),
)
