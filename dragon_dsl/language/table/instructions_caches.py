"""The cache and compute-location instructions of the instruction table.

Entries in TVM's order of concerns; `instructions` assembles the table from these modules in order.
"""

from __future__ import annotations

from dragon_dsl.language.table.instructions_make import _BLOCK, P, _at, _block_only, _cache, _compute_at, _reindex_cache
from dragon_dsl.language.table.schema import At, In, Instruction, Results

CACHES: tuple[Instruction, ...] = (
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
)
