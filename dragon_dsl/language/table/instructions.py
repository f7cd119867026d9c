"""The instruction entries: one per TVM schedule instruction kind, in TVM's order of concerns,
with the families and groups that readers ask instead of naming instructions.
"""

from __future__ import annotations

from dragon_dsl.language.table.schema import DECISION, At, In, Instruction, Param, Results

# ---- the table -------------------------------------------------------------

P = Param
_BLOCK = "The block to work on."
_LOOP = "The loop to work on."


def _cache(name, kind, side, doc):
    return Instruction(
        name,
        kind,
        False,
        (
            P("block", "block", In(0), doc="The block that accesses the buffer."),
            P(f"{side}_buffer_index", "int", At(0), doc=f"Which {side} buffer of the block (0-based)."),
            P("storage_scope", "scope", At(1), doc='Storage scope of the cache, e.g. "shared" or "local".'),
            P(
                "consumer_blocks",
                "list[block]",
                In(1),
                default=[],
                keyword=True,
                doc="Only these consumers read through the cache (default: all).",
            ),
        ),
        Results("block", 1),
        None,
        doc,
        n_inputs=2,
        n_attrs=2,
    )


def _reindex_cache(name, kind, side, doc):
    return Instruction(
        name,
        kind,
        False,
        (
            P("block", "block", In(0), doc="The block that accesses the buffer."),
            P(f"{side}_buffer_index", "int", At(0), doc=f"Which {side} buffer of the block."),
            P("storage_scope", "scope", At(1), doc="Storage scope of the cache."),
            P("index_map", "index_map", In(1), doc="Maps the block's iteration variables to the cache's indices."),
        ),
        Results("block", 1),
        None,
        doc,
        n_inputs=2,
        n_attrs=2,
    )


def _at(name, kind, side, doc):
    return Instruction(
        name,
        kind,
        False,
        (
            P("loop", "loop", In(0), doc="The loop under which the data is copied."),
            P("block", "block", In(1), doc="The block that accesses the buffer."),
            P(f"{side}_buffer_index", "int", At(0), doc=f"Which {side} buffer of the block."),
            P("storage_scope", "scope", At(1), doc="Storage scope of the copy."),
        ),
        Results("block", 1),
        None,
        doc,
        n_inputs=2,
        n_attrs=2,
    )


def _compute_at(name, kind, doc):
    return Instruction(
        name,
        kind,
        False,
        (
            P("block", "block", In(0), doc="The block to move."),
            P("loop", "location", In(1), doc="The loop it moves under, or a sampled compute location."),
            P(
                "preserve_unit_loops",
                "bool",
                At(0),
                default=0,
                keyword=True,
                bool_json="int",
                doc="Keep loops of extent 1.",
            ),
            P(
                "index",
                "int",
                At(1),
                default=-1,
                keyword=True,
                doc="Position among the loop's children (-1: the last valid one).",
            ),
        ),
        Results(),
        None,
        doc,
        n_inputs=2,
        n_attrs=2,
    )


def _getter(name, kind, arg, arg_type, doc, arg_doc):
    return Instruction(
        name, kind, True, (P(arg, arg_type, In(0), doc=arg_doc),), Results("block", "*"), None, doc, n_inputs=1
    )


def _loop_only(name, kind, doc):
    return Instruction(name, kind, False, (P("loop", "loop", In(0), doc=_LOOP),), Results(), None, doc, n_inputs=1)


def _block_only(name, kind, doc, results=Results()):
    return Instruction(name, kind, False, (P("block", "block", In(0), doc=_BLOCK),), results, None, doc, n_inputs=1)


INSTRUCTIONS: tuple[Instruction, ...] = (
    # -- getters (pure) ---------------------------------------------------------
    Instruction(
        "get_sblock",
        "GetSBlock",
        True,
        (
            P("name", "str", At(0), doc="The block's name in the workload."),
            P("func_name", "str", At(1), default="main", keyword=True, doc="The function that holds the block."),
        ),
        Results("block", 1),
        None,
        "Look up a block by name.",
        n_inputs=0,
        n_attrs=2,
    ),
    Instruction(
        "get_loops",
        "GetLoops",
        True,
        (P("block", "block", In(0), doc=_BLOCK),),
        Results("loop", "*"),
        None,
        "The loops above a block, outermost first.",
        n_inputs=1,
    ),
    _getter(
        "get_child_blocks",
        "GetChildBlocks",
        "parent",
        "block|loop",
        "The blocks directly under a block or loop.",
        "A block or a loop.",
    ),
    _getter("get_producers", "GetProducers", "block", "block", "The blocks that write what the block reads.", _BLOCK),
    _getter("get_consumers", "GetConsumers", "block", "block", "The blocks that read what the block writes.", _BLOCK),
    _getter(
        "get_output_blocks",
        "GetOutputBlocks",
        "scope_block",
        "block",
        "The blocks under a scope block that write its output buffers.",
        "The scope block, often root.",
    ),
    # -- sampling (pure, with decisions) ----------------------------------------
    Instruction(
        "sample_categorical",
        "SampleCategorical",
        True,
        (
            P("candidates", "list[int]", At(0), doc="The values to choose from."),
            P("probs", "list[float]", At(1), doc="The probability of each candidate."),
            P("decision", "int", DECISION, default=None, keyword=True, doc="Index of the chosen candidate."),
        ),
        Results("value", 1),
        "index",
        "Choose one integer among candidates.",
        n_inputs=0,
        n_attrs=2,
    ),
    Instruction(
        "sample_perfect_tile",
        "SamplePerfectTile",
        True,
        (
            P("loop", "loop", In(0), doc="The loop to tile."),
            P("n", "int", At(0), keyword=True, doc="Number of tile factors."),
            P(
                "max_innermost_factor",
                "int",
                At(1),
                default=16,
                keyword=True,
                doc="Upper bound of the innermost factor.",
            ),
            P(
                "decision",
                "list[int]",
                DECISION,
                default=None,
                keyword=True,
                doc="The n factors; their product is the loop's extent.",
            ),
        ),
        Results("value", "n"),
        "tile",
        "Sample n factors whose product is the loop's extent.",
        n_inputs=1,
        n_attrs=2,
    ),
    Instruction(
        "sample_partitioned_tile",
        "SamplePartitionedTile",
        True,
        (
            P("loop", "loop", In(0), doc="The loop to tile."),
            P("n", "int", At(0), keyword=True, doc="Number of tile factors."),
            P("partition_pos", "int", At(1), default=0, keyword=True, doc="Position of the partitioned factor."),
            P("innerpart_factor", "int", At(2), default=1, keyword=True, doc="The inner part's factor."),
            P("decision", "list[int]", DECISION, default=None, keyword=True, doc="The n factors."),
        ),
        Results("value", "n"),
        "tile",
        "Sample n factors for a partitioned tiling.",
        n_inputs=1,
        n_attrs=3,
    ),
    Instruction(
        "sample_compute_location",
        "SampleComputeLocation",
        True,
        (
            P("block", "block", In(0), doc="The block to place."),
            P(
                "decision",
                "int",
                DECISION,
                default=None,
                keyword=True,
                doc="-2: inline, -1: root, k >= 0: the k-th loop of its first consumer.",
            ),
        ),
        Results("location", 1),
        "location",
        "Sample a loop to compute a block at (only compute_at and reverse_compute_at take the result).",
        n_inputs=1,
    ),
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
    # -- caches and buffers -----------------------------------------------------
    _cache("cache_read", "CacheRead", "read", "Read a buffer through a cache in another storage scope."),
    _cache("cache_write", "CacheWrite", "write", "Write a buffer through a cache in another storage scope."),
    Instruction(
        "cache_inplace",
        "CacheInplace",
        False,
        (
            P("block", "block", In(0), doc=_BLOCK),
            P("read_buffer_index", "int", At(0), doc="Which read buffer (also written in place)."),
            P("storage_scope", "scope", At(1), doc="Storage scope of the cache."),
        ),
        Results("block", 2),
        None,
        "Cache a buffer that a block reads and writes in place; binds the read and the write block.",
        n_inputs=1,
        n_attrs=2,
    ),
    Instruction(
        "cache_index",
        "CacheIndex",
        False,
        (
            P("block", "block", In(0), doc=_BLOCK),
            P("storage_scope", "scope", At(0), doc="Storage scope of the index buffers."),
            P("cse_thresh", "int", At(1), default=0, keyword=True, doc="Common-subexpression threshold."),
        ),
        Results("block", "*"),
        None,
        "Precompute index expressions into buffers.",
        n_inputs=1,
        n_attrs=2,
    ),
    Instruction(
        "reindex",
        "ReIndex",
        False,
        (P("block", "block", In(0), doc=_BLOCK), P("buffer", "buffer", At((0, 1)), doc="read(i) or write(i).")),
        Results("block", 1),
        None,
        "Copy a buffer into one indexed by the block's iteration variables.",
        n_inputs=1,
        n_attrs=2,
    ),
    _reindex_cache("reindex_cache_read", "ReindexCacheRead", "read", "Cache a read buffer with a re-indexed layout."),
    _reindex_cache(
        "reindex_cache_write", "ReindexCacheWrite", "write", "Cache a written buffer with a re-indexed layout."
    ),
    _at("read_at", "ReadAt", "read", "Copy a read region into a cache under a loop."),
    _at("write_at", "WriteAt", "write", "Copy a written region out of a cache under a loop."),
    # -- compute location ---------------------------------------------------------
    _compute_at("compute_at", "ComputeAt", "Move a producer block under a loop of its consumer."),
    _compute_at("reverse_compute_at", "ReverseComputeAt", "Move a consumer block under a loop of its producer."),
    _block_only("compute_inline", "ComputeInline", "Inline a block into its consumers."),
    _block_only("reverse_compute_inline", "ReverseComputeInline", "Inline a block into its producer."),
    Instruction(
        "fuse_reduction_epilogue",
        "FuseReductionEpilogue",
        False,
        (
            P("reduction_block", "block", In(0), doc="The reduction block."),
            P("epilogue_block", "block", In(1), doc="The elementwise block after it."),
        ),
        Results(),
        None,
        "Fuse an elementwise epilogue into a reduction block.",
        n_inputs=2,
    ),
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
