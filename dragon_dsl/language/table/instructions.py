"""The instruction entries: one per TVM schedule instruction kind, in TVM's order of concerns,
with the families and groups that readers ask instead of naming instructions.

The entries are written by group in the instructions_* modules (query, loops, caches, blocks,
layouts; their shared builders in instructions_make); this module assembles them in order.
"""

from __future__ import annotations

from dragon_dsl.language.table.instructions_blocks import BLOCKS
from dragon_dsl.language.table.instructions_caches import CACHES
from dragon_dsl.language.table.instructions_layouts import LAYOUTS
from dragon_dsl.language.table.instructions_loops import LOOPS
from dragon_dsl.language.table.instructions_make import P  # noqa: F401  (importable here as before the split)
from dragon_dsl.language.table.instructions_query import QUERIES
from dragon_dsl.language.table.schema import (  # noqa: F401  (importable here as before the split)
    DECISION,
    At,
    In,
    Instruction,
    Param,
    Results,
)

# ---- the table -------------------------------------------------------------

#: In TVM's order of concerns: getters, sampling, loops, caches and compute location, reductions,
#: buffers, blockize and tensorize, annotations, layouts, postprocessing.
INSTRUCTIONS: tuple[Instruction, ...] = (*QUERIES, *LOOPS, *CACHES, *BLOCKS, *LAYOUTS)

BY_NAME: dict[str, Instruction] = {i.name: i for i in INSTRUCTIONS}
BY_KIND: dict[str, Instruction] = {i.kind: i for i in INSTRUCTIONS}
SECTIONS: dict[str, Instruction] = {i.section: i for i in INSTRUCTIONS if i.section}


class _ByName:
    """The instructions as attributes (`INST.split`): code that needs one instruction asks the
    table for it, and a name the table does not hold fails at import instead of never matching."""

    def __init__(self, by_name: dict[str, Instruction]):
        self.__dict__.update(by_name)

    def __getattr__(self, name: str) -> Instruction:
        raise AttributeError(f"the instruction table has no instruction {name!r}")


INST = _ByName(BY_NAME)


# ---- instruction groups ------------------------------------------------------------
#: Every instruction belongs to exactly one family: what it does to which block or loop. The
#: explanation rules are written per family (dragon_dsl/explain/rules/), the reference lists them.
FAMILIES: dict[str, tuple[str, ...]] = {
    "lookup": ("get_sblock", "get_loops", "get_child_blocks", "get_producers", "get_consumers", "get_output_blocks"),
    "sampling": ("sample_categorical", "sample_perfect_tile", "sample_partitioned_tile", "sample_compute_location"),
    "loop_structure": ("split", "loop_partition", "merge", "fuse", "reorder", "add_unit_loop"),
    "loop_kind": ("parallel", "vectorize", "unroll"),
    "thread_binding": ("bind",),
    "cache": ("cache_read", "cache_write", "cache_inplace", "cache_index", "read_at", "write_at"),
    "compute_location": (
        "compute_at",
        "reverse_compute_at",
        "compute_inline",
        "reverse_compute_inline",
        "fuse_reduction_epilogue",
    ),
    "reduction": ("decompose_reduction", "rfactor"),
    "layout": (
        "transform_layout",
        "transform_block_layout",
        "storage_align",
        "set_scope",
        "reindex",
        "pad_einsum",
        "reindex_cache_read",
        "reindex_cache_write",
        "reorder_block_iter_var",
        "rolling_buffer",
        "unsafe_set_dtype",
        "annotate_buffer_access",
        "unsafe_hide_buffer_access",
        "decompose_padding",
    ),
    "tensorize": ("blockize", "tensorize"),
    "annotation": ("annotate", "unannotate"),
    "section": ("enter_postproc",),
}
FAMILY_OF: dict[str, str] = {name: fam for fam, names in FAMILIES.items() for name in names}

#: Groups that cut across families, named by what their readers ask.
GROUPS: dict[str, frozenset[str]] = {
    # samplers of tile factors (a split takes their values)
    "tile_sampling": frozenset({"sample_perfect_tile", "sample_partitioned_tile"}),
    # make loops out of loops: a result loop belongs to the block of the loop it was made from
    "loop_making": frozenset({"split", "fuse", "loop_partition", "merge", "add_unit_loop"}),
    # caches of a buffer the block reads (the others cache a buffer it writes)
    "read_cache": frozenset({"cache_read", "read_at", "cache_inplace"}),
    "write_cache": frozenset({"cache_write", "write_at"}),
    # instructions on a cache stage's own block and loops that shape its copy (cooperative fetch)
    "cache_stage": frozenset(
        {
            "compute_at",
            "reverse_compute_at",
            "fuse",
            "split",
            "bind",
            "vectorize",
            "annotate",
            "unannotate",
            "storage_align",
        }
    ),
    # compute a block where another reads its output (the others where it reads its input)
    "producer_side": frozenset({"compute_inline", "compute_at"}),
    "inline": frozenset({"compute_inline", "reverse_compute_inline"}),
    # copies of a buffer in another storage scope that only exist to be read or written there: inlining
    # one again undoes it (DRG106; none of the 110k CUDA and llvm training scripts does)
    "staging_copy": frozenset({"cache_read", "cache_write"}),
    # the schedule model never writes these: they can change results (unsafe_*), or MetaSchedule never
    # writes them on the targets it is trained for (tensorize is written with the intrinsics its
    # training corpus annotates blocks with: the decoder's grammar)
    "not_decoded": frozenset(
        {
            "unsafe_set_dtype",
            "unsafe_hide_buffer_access",
            "cache_index",
            "enter_postproc",
            "sample_partitioned_tile",
            "loop_partition",
            "merge",
        }
    ),
}


def in_group(inst: Instruction, group: str) -> bool:
    """Whether an instruction is in a family or a group of the table (KeyError: no such group)."""
    if group in FAMILIES:
        return FAMILY_OF[inst.name] == group
    return inst.name in GROUPS[group]
