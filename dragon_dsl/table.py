"""The instruction table: the single source of truth for the Dragon language.

One `Instruction` per TVM schedule instruction kind (52 in TVM 0.27). It says
what the instruction is called in a script, how its parameters are typed, in
which slot of TVM's trace JSON each parameter lives (TVM order), the defaults
TVM writes, the results it binds and the shape of its sampling decision. The
checker, the codec, the formatter, the language server, the editor grammar
and the model's tokenizer all read this table; none of them names an
instruction on its own.

Trace JSON of one instruction (TVM `TraceNode::AsJSON`):
    [ /* 0: kind */ "Split", /* 1: inputs */ [...], /* 2: attrs */ [...], /* 3: outputs */ [...] ]
and the decisions of the trace: [[instruction index, decision], ...].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

#: The TVM release whose trace schema this table describes.
TRACE_SCHEMA = "tvm-0.27.0.post1"
#: Written into the metadata of index-map JSON graphs the codec produces.
TVM_VERSION = "0.27.0.post1"


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Slot:
    """Where a parameter lives in the instruction's JSON.

    section: "inputs", "attrs" or "decision".
    index:   position in that list; a pair (index, side) for a buffer parameter
             that is written as a buffer index followed by a read/write bit.
    rest:    the parameter is flattened into the inputs from `index` on
             (the factors of split, the loops of fuse and reorder).
    """

    section: str
    index: Union[int, tuple[int, int], None] = None
    rest: bool = False


def In(i, rest: bool = False) -> Slot:  # noqa: N802 - reads like the JSON it describes
    return Slot("inputs", i, rest)


def At(i) -> Slot:  # noqa: N802
    return Slot("attrs", i)


DECISION = Slot("decision")


@dataclass(frozen=True)
class Param:
    """One parameter of an instruction.

    type: a type of the Dragon type language:
      block, loop, value            random variables (results of earlier instructions)
      location                      a loop or a compute location (the result of sample_compute_location,
                                    which may be the root or "inline" marker: no other instruction takes it)
      block|loop, loop|list[block]  unions
      int, float, bool, str         literals
      scope, thread, dtype          strings with a domain (storage scope, thread axis, data type)
      factor                        value, int or None (a split factor)
      buffer                        read(i) or write(i): a buffer of a block and its side
      buffer_kind                   "read" or "write"
      index_map, index_map?         a lambda (index map); `?`: or None
      any                           an annotation value
      list[T]                       a list of T
    bool_json: how TVM writes a bool of this parameter: "bool" (true/false) or "int" (1/0).
    keyword: the canonical form writes it as `name=value` (after the positional ones).
    """

    name: str
    type: str
    slot: Slot
    default: Any = REQUIRED
    doc: str = ""
    keyword: bool = False
    bool_json: str = "bool"

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def variadic(self) -> bool:
        return self.slot.rest and not self.type.startswith("list[")


@dataclass(frozen=True)
class Results:
    """The results an instruction binds.

    kind:  block, loop, value or location.
    count: an int; "n" (the value of parameter n); "factors" (one per split factor);
           "*" (any number: known only when TVM replays, e.g. get_loops).
    remainder: with "factors", one more result (the rest of the loop) when no factor
           is None: TVM's loop_partition makes len(factors) + 1 parts then.
    kinds: for results of different kinds (cache_inplace binds two blocks), a tuple.
    """

    kind: Optional[str] = None
    count: Union[int, str] = 0
    remainder: bool = False

    def fixed(self) -> Optional[int]:
        return self.count if isinstance(self.count, int) else None

    def expected(self, args: dict) -> Optional[int]:
        """How many results an instruction with these typed arguments binds (None: known at replay)."""
        c = self.count
        if isinstance(c, int):
            return c
        if c == "n":
            n = args.get("n")
            return n if isinstance(n, int) else None
        if c == "factors":
            factors = args.get("factors")
            if not isinstance(factors, list) or not factors:
                return None
            return len(factors) + (1 if self.remainder and None not in factors else 0)
        return None


@dataclass(frozen=True)
class Instruction:
    name: str  # the DSL name, as written in scripts
    kind: str  # TVM's instruction kind (trace JSON position 0)
    pure: bool
    params: tuple[Param, ...]
    results: Results
    decision: Optional[str]  # None, "index", "tile" or "location"
    doc: str
    n_inputs: Optional[int] = None  # fixed JSON input count (None when variadic)
    n_attrs: int = 0
    section: Optional[str] = None  # written as a section header instead of a call
    schema: str = TRACE_SCHEMA

    def param(self, name: str) -> Optional[Param]:
        for p in self.params:
            if p.name == name:
                return p
        return None

    def signature(self) -> str:
        """`split(loop: loop, factors: list[factor], *, preserve_unit_iters: bool = True, ...) -> loop*`"""
        if self.section:
            return f"{self.section}:"
        parts = []
        star = False
        for p in self.params:
            star = star or p.variadic  # after *loops, everything is keyword-only already
            if p.keyword and not star:
                parts.append("*")
                star = True
            if p.variadic:
                parts.append(f"*{p.name}: {p.type}")
            elif p.required:
                parts.append(f"{p.name}: {p.type}")
            else:
                parts.append(f"{p.name}: {p.type} = {literal_text(p.default, p)}")
        res = ""
        if self.results.count:
            c = self.results.count
            res = f" -> {self.results.kind}" + ("" if c == 1 else f" x {c}" if isinstance(c, int) else f"[{c}]")
        return f"{self.name}({', '.join(parts)}){res}"


def literal_text(value, param: Optional[Param] = None) -> str:
    """How a default value reads in documentation."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if param is not None and param.type == "bool" and isinstance(value, int):
        return "True" if value else "False"
    if isinstance(value, str):
        return '"' + value + '"'
    return repr(value)


# ---- domains of string-typed parameters ------------------------------------

STORAGE_SCOPES = (
    "global", "shared", "shared.dyn", "local", "warp", "wmma.matrix_a", "wmma.matrix_b",
    "wmma.accumulator", "m16n8k8.matrixA", "m16n8k8.matrixB", "m16n8k8.matrixC",
    "global.texture", "global.texture-nhwc", "global.texture-weight", "local.fragment",
)
THREAD_AXES = (
    "blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
    "vthread", "vthread.x", "vthread.y", "vthread.z",
)
DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "float32", "float64",
)
BUFFER_KINDS = ("read", "write")

DOMAINS: dict[str, tuple[str, ...]] = {
    "thread": THREAD_AXES,
    "dtype": DTYPES,
    "buffer_kind": BUFFER_KINDS,
}
#: Scopes are open-ended in TVM (a target may define more); these are checked loosely:
#: an unknown scope is an error only when it does not look like one (see checker).
# The name prefix of each kind of random variable, as TVM names them in traces (b0, l1, v2);
# a sampled compute location is a loop to TVM.
RESULT_PREFIX = {"block": "b", "loop": "l", "value": "v", "location": "l"}
#: The kinds of random variable a reference-typed parameter accepts (the checker, the decoder and
#: the editor's completion read it); a compute_at location may be a loop or a sampled location.
REF_KINDS: dict[str, tuple[str, ...]] = {
    "block": ("block",), "loop": ("loop",), "value": ("value",),
    "block|loop": ("block", "loop"), "location": ("loop", "location"),
}
SCOPE_PREFIXES = ("global", "shared", "local", "warp", "wmma.", "m16n8k8.", "metal.")


# ---- the table -------------------------------------------------------------

P = Param
_BLOCK = "The block to work on."
_LOOP = "The loop to work on."


def _cache(name, kind, side, doc):
    return Instruction(
        name, kind, False,
        (P("block", "block", In(0), doc="The block that accesses the buffer."),
         P(f"{side}_buffer_index", "int", At(0), doc=f"Which {side} buffer of the block (0-based)."),
         P("storage_scope", "scope", At(1), doc="Storage scope of the cache, e.g. \"shared\" or \"local\"."),
         P("consumer_blocks", "list[block]", In(1), default=[], keyword=True,
           doc="Only these consumers read through the cache (default: all).")),
        Results("block", 1), None, doc, n_inputs=2, n_attrs=2)


def _reindex_cache(name, kind, side, doc):
    return Instruction(
        name, kind, False,
        (P("block", "block", In(0), doc="The block that accesses the buffer."),
         P(f"{side}_buffer_index", "int", At(0), doc=f"Which {side} buffer of the block."),
         P("storage_scope", "scope", At(1), doc="Storage scope of the cache."),
         P("index_map", "index_map", In(1), doc="Maps the block's iteration variables to the cache's indices.")),
        Results("block", 1), None, doc, n_inputs=2, n_attrs=2)


def _at(name, kind, side, doc):
    return Instruction(
        name, kind, False,
        (P("loop", "loop", In(0), doc="The loop under which the data is copied."),
         P("block", "block", In(1), doc="The block that accesses the buffer."),
         P(f"{side}_buffer_index", "int", At(0), doc=f"Which {side} buffer of the block."),
         P("storage_scope", "scope", At(1), doc="Storage scope of the copy.")),
        Results("block", 1), None, doc, n_inputs=2, n_attrs=2)


def _compute_at(name, kind, doc):
    return Instruction(
        name, kind, False,
        (P("block", "block", In(0), doc="The block to move."),
         P("loop", "location", In(1), doc="The loop it moves under, or a sampled compute location."),
         P("preserve_unit_loops", "bool", At(0), default=0, keyword=True, bool_json="int",
           doc="Keep loops of extent 1."),
         P("index", "int", At(1), default=-1, keyword=True,
           doc="Position among the loop's children (-1: the last valid one).")),
        Results(), None, doc, n_inputs=2, n_attrs=2)


def _getter(name, kind, arg, arg_type, doc, arg_doc):
    return Instruction(name, kind, True, (P(arg, arg_type, In(0), doc=arg_doc),),
                       Results("block", "*"), None, doc, n_inputs=1)


def _loop_only(name, kind, doc):
    return Instruction(name, kind, False, (P("loop", "loop", In(0), doc=_LOOP),), Results(), None, doc, n_inputs=1)


def _block_only(name, kind, doc, results=Results()):
    return Instruction(name, kind, False, (P("block", "block", In(0), doc=_BLOCK),), results, None, doc, n_inputs=1)


INSTRUCTIONS: tuple[Instruction, ...] = (
    # -- getters (pure) ---------------------------------------------------------
    Instruction(
        "get_sblock", "GetSBlock", True,
        (P("name", "str", At(0), doc="The block's name in the workload."),
         P("func_name", "str", At(1), default="main", keyword=True, doc="The function that holds the block.")),
        Results("block", 1), None, "Look up a block by name.", n_inputs=0, n_attrs=2),
    Instruction(
        "get_loops", "GetLoops", True, (P("block", "block", In(0), doc=_BLOCK),),
        Results("loop", "*"), None, "The loops above a block, outermost first.", n_inputs=1),
    _getter("get_child_blocks", "GetChildBlocks", "parent", "block|loop",
            "The blocks directly under a block or loop.", "A block or a loop."),
    _getter("get_producers", "GetProducers", "block", "block", "The blocks that write what the block reads.", _BLOCK),
    _getter("get_consumers", "GetConsumers", "block", "block", "The blocks that read what the block writes.", _BLOCK),
    _getter("get_output_blocks", "GetOutputBlocks", "scope_block", "block",
            "The blocks under a scope block that write its output buffers.", "The scope block, often root."),
    # -- sampling (pure, with decisions) ----------------------------------------
    Instruction(
        "sample_categorical", "SampleCategorical", True,
        (P("candidates", "list[int]", At(0), doc="The values to choose from."),
         P("probs", "list[float]", At(1), doc="The probability of each candidate."),
         P("decision", "int", DECISION, default=None, keyword=True, doc="Index of the chosen candidate.")),
        Results("value", 1), "index", "Choose one integer among candidates.", n_inputs=0, n_attrs=2),
    Instruction(
        "sample_perfect_tile", "SamplePerfectTile", True,
        (P("loop", "loop", In(0), doc="The loop to tile."),
         P("n", "int", At(0), keyword=True, doc="Number of tile factors."),
         P("max_innermost_factor", "int", At(1), default=16, keyword=True, doc="Upper bound of the innermost factor."),
         P("decision", "list[int]", DECISION, default=None, keyword=True,
           doc="The n factors; their product is the loop's extent.")),
        Results("value", "n"), "tile", "Sample n factors whose product is the loop's extent.", n_inputs=1, n_attrs=2),
    Instruction(
        "sample_partitioned_tile", "SamplePartitionedTile", True,
        (P("loop", "loop", In(0), doc="The loop to tile."),
         P("n", "int", At(0), keyword=True, doc="Number of tile factors."),
         P("partition_pos", "int", At(1), default=0, keyword=True, doc="Position of the partitioned factor."),
         P("innerpart_factor", "int", At(2), default=1, keyword=True, doc="The inner part's factor."),
         P("decision", "list[int]", DECISION, default=None, keyword=True, doc="The n factors.")),
        Results("value", "n"), "tile", "Sample n factors for a partitioned tiling.", n_inputs=1, n_attrs=3),
    Instruction(
        "sample_compute_location", "SampleComputeLocation", True,
        (P("block", "block", In(0), doc="The block to place."),
         P("decision", "int", DECISION, default=None, keyword=True,
           doc="-2: inline, -1: root, k >= 0: the k-th loop of its first consumer.")),
        Results("location", 1), "location", "Sample a loop to compute a block at (only compute_at and "
        "reverse_compute_at take the result).", n_inputs=1),
    # -- loops --------------------------------------------------------------------
    Instruction(
        "split", "Split", False,
        (P("loop", "loop", In(0), doc="The loop to split."),
         P("factors", "list[factor]", In(1, rest=True), doc="Factors, outermost first; at most one None (inferred)."),
         P("preserve_unit_iters", "bool", At(0), default=True, keyword=True, doc="Keep iterators of extent 1."),
         P("disable_predication", "bool", At(1), default=False, keyword=True,
           doc="Do not guard an imperfect split with a predicate.")),
        Results("loop", "factors"), None, "Split a loop into nested loops.", n_attrs=2),
    Instruction(
        "loop_partition", "LoopPartition", False,
        (P("loop", "loop", In(0), doc="The loop to partition."),
         P("factors", "list[factor]", In(1, rest=True), doc="Sizes of the consecutive parts."),
         P("preserve_unit_iters", "bool", At(0), default=1, keyword=True, bool_json="int",
           doc="Keep iterators of extent 1.")),
        Results("loop", "factors", remainder=True), None, "Partition a loop into consecutive loops.", n_attrs=1),
    Instruction(
        "merge", "Merge", False, (P("loops", "loop", In(0, rest=True), doc="Loops of equal extent to merge."),),
        Results("loop", 1), None, "Merge loops of the same extent into one."),
    Instruction(
        "fuse", "Fuse", False,
        (P("loops", "loop", In(0, rest=True), doc="Consecutive loops, outermost first."),
         P("preserve_unit_iters", "bool", At(0), default=1, keyword=True, bool_json="int",
           doc="Keep iterators of extent 1.")),
        Results("loop", 1), None, "Fuse consecutive loops into one.", n_attrs=1),
    Instruction(
        "reorder", "Reorder", False, (P("loops", "loop", In(0, rest=True), doc="Loops in their new order."),),
        Results(), None, "Reorder loops."),
    Instruction(
        "reorder_block_iter_var", "ReorderBlockIterVar", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("new_order", "list[int]", In(1), doc="A permutation of the block's iteration variables.")),
        Results(), None, "Reorder the iteration variables of a block.", n_inputs=2),
    Instruction(
        "add_unit_loop", "AddUnitLoop", False, (P("target", "block|loop", In(0), doc="A block or a loop."),),
        Results("loop", 1), None, "Add a loop of extent 1 above a block or loop.", n_inputs=1),
    _loop_only("parallel", "Parallel", "Run a loop's iterations in parallel (CPU threads)."),
    _loop_only("vectorize", "Vectorize", "Vectorize a loop."),
    _loop_only("unroll", "Unroll", "Unroll a loop."),
    Instruction(
        "bind", "Bind", False,
        (P("loop", "loop", In(0), doc=_LOOP),
         P("thread_axis", "thread", At(0), doc="A GPU thread axis, e.g. \"threadIdx.x\".")),
        Results(), None, "Bind a loop to a GPU thread axis.", n_inputs=1, n_attrs=1),
    # -- caches and buffers -----------------------------------------------------
    _cache("cache_read", "CacheRead", "read", "Read a buffer through a cache in another storage scope."),
    _cache("cache_write", "CacheWrite", "write", "Write a buffer through a cache in another storage scope."),
    Instruction(
        "cache_inplace", "CacheInplace", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("read_buffer_index", "int", At(0), doc="Which read buffer (also written in place)."),
         P("storage_scope", "scope", At(1), doc="Storage scope of the cache.")),
        Results("block", 2), None, "Cache a buffer that a block reads and writes in place; binds the read and the write block.",
        n_inputs=1, n_attrs=2),
    Instruction(
        "cache_index", "CacheIndex", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("storage_scope", "scope", At(0), doc="Storage scope of the index buffers."),
         P("cse_thresh", "int", At(1), default=0, keyword=True, doc="Common-subexpression threshold.")),
        Results("block", "*"), None, "Precompute index expressions into buffers.", n_inputs=1, n_attrs=2),
    Instruction(
        "reindex", "ReIndex", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("buffer", "buffer", At((0, 1)), doc="read(i) or write(i).")),
        Results("block", 1), None, "Copy a buffer into one indexed by the block's iteration variables.",
        n_inputs=1, n_attrs=2),
    _reindex_cache("reindex_cache_read", "ReindexCacheRead", "read", "Cache a read buffer with a re-indexed layout."),
    _reindex_cache("reindex_cache_write", "ReindexCacheWrite", "write", "Cache a written buffer with a re-indexed layout."),
    _at("read_at", "ReadAt", "read", "Copy a read region into a cache under a loop."),
    _at("write_at", "WriteAt", "write", "Copy a written region out of a cache under a loop."),
    # -- compute location ---------------------------------------------------------
    _compute_at("compute_at", "ComputeAt", "Move a producer block under a loop of its consumer."),
    _compute_at("reverse_compute_at", "ReverseComputeAt", "Move a consumer block under a loop of its producer."),
    _block_only("compute_inline", "ComputeInline", "Inline a block into its consumers."),
    _block_only("reverse_compute_inline", "ReverseComputeInline", "Inline a block into its producer."),
    Instruction(
        "fuse_reduction_epilogue", "FuseReductionEpilogue", False,
        (P("reduction_block", "block", In(0), doc="The reduction block."),
         P("epilogue_block", "block", In(1), doc="The elementwise block after it.")),
        Results(), None, "Fuse an elementwise epilogue into a reduction block.", n_inputs=2),
    # -- reductions ---------------------------------------------------------------
    Instruction(
        "decompose_reduction", "DecomposeReduction", False,
        (P("block", "block", In(0), doc="The reduction block."),
         P("loop", "loop", In(1), doc="The loop above which the initialisation goes.")),
        Results("block", 1), None, "Split a reduction's initialisation into its own block.", n_inputs=2),
    Instruction(
        "rfactor", "RFactor", False,
        (P("loop", "loop", In(0), doc="A reduction loop."),
         P("factor_axis", "int", At(0), doc="Where the new dimension goes in the rfactor buffer.")),
        Results("block", 1), None, "Factor a reduction over a loop into a separate block.", n_inputs=1, n_attrs=1),
    # -- buffers ------------------------------------------------------------------
    Instruction(
        "storage_align", "StorageAlign", False,
        (P("block", "block", In(0), doc="The block that writes the buffer."),
         P("buffer_index", "int", At(0), doc="Which write buffer."),
         P("axis", "int", At(1), doc="The axis to align."),
         P("factor", "int", At(2), doc="The alignment factor."),
         P("offset", "int", At(3), doc="The offset.")),
        Results(), None, "Pad a buffer's stride: stride % factor == offset.", n_inputs=1, n_attrs=4),
    Instruction(
        "set_scope", "SetScope", False,
        (P("block", "block", In(0), doc="The block that writes the buffer."),
         P("buffer_index", "int", At(0), doc="Which write buffer."),
         P("storage_scope", "scope", At(1), doc="The new storage scope.")),
        Results(), None, "Change a buffer's storage scope.", n_inputs=1, n_attrs=2),
    Instruction(
        "unsafe_set_dtype", "UnsafeSetDType", False,
        (P("block", "block", In(0), doc="The block that writes the buffer."),
         P("buffer_index", "int", At(0), doc="Which write buffer."),
         P("dtype", "dtype", At(1), doc="The new data type.")),
        Results(), None, "Change a buffer's data type (unsafe: no check of the computation).", n_inputs=1, n_attrs=2),
    # -- blockize and tensorize ----------------------------------------------------
    Instruction(
        "blockize", "Blockize", False,
        (P("target", "loop|list[block]", In(0), doc="A loop, or a list of blocks."),
         P("preserve_unit_iters", "bool", At(0), default=True, keyword=True, doc="Keep iterators of extent 1.")),
        Results("block", 1), None, "Turn the subtree under a loop (or some blocks) into one block.", n_inputs=1, n_attrs=1),
    Instruction(
        "tensorize", "Tensorize", False,
        (P("target", "block|loop", In(0), doc="A block or a loop."),
         P("tensor_intrin", "str", At(0), doc="The name of a registered tensor intrinsic."),
         P("preserve_unit_iters", "bool", At(1), default=True, keyword=True, doc="Keep iterators of extent 1.")),
        Results(), None, "Replace a computation by a tensor intrinsic.", n_inputs=1, n_attrs=2),
    # -- annotations ----------------------------------------------------------------
    Instruction(
        "annotate", "Annotate", False,
        (P("target", "block|loop", In(0), doc="A block or a loop."),
         P("key", "str", At(0), doc="The annotation key."),
         P("value", "any", In(1), doc="An int, float, bool, string, value, list or dict.")),
        Results(), None, "Attach an annotation to a block or loop.", n_inputs=2, n_attrs=1),
    Instruction(
        "unannotate", "Unannotate", False,
        (P("target", "block|loop", In(0), doc="A block or a loop."),
         P("key", "str", At(0), doc="The annotation key.")),
        Results(), None, "Remove an annotation.", n_inputs=1, n_attrs=1),
    # -- layouts ----------------------------------------------------------------------
    Instruction(
        "transform_layout", "TransformLayout", False,
        (P("block", "block", In(0), doc="A block that accesses the buffer."),
         P("buffer", "buffer", At((0, 1)), doc="read(i) or write(i)."),
         P("index_map", "index_map", In(1), doc="The new layout, e.g. lambda i, j: (i // 16, j, i % 16)."),
         P("pad_value", "index_map?", At(2), default=None, keyword=True, doc="Value of padding elements, or None."),
         P("assume_injective_transform", "bool", At(3), default=False, keyword=True,
           doc="Skip the injectivity check.")),
        Results(), None, "Change a buffer's layout.", n_inputs=2, n_attrs=4),
    Instruction(
        "transform_block_layout", "TransformBlockLayout", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("index_map", "index_map", At(0), doc="Maps the block's iteration variables to new ones.")),
        Results(), None, "Change the iteration space of a block.", n_inputs=1, n_attrs=1),
    Instruction(
        "decompose_padding", "DecomposePadding", False,
        (P("block", "block", In(0), doc="The padding block."),
         P("loop", "loop", In(1), doc="The loop above which the padding fill goes.")),
        Results("block", 1), None, "Split a padding block into a fill and a copy.", n_inputs=2),
    Instruction(
        "pad_einsum", "PadEinsum", False,
        (P("block", "block", In(0), doc="An einsum-like block."),
         P("padding", "list[int]", At(0), doc="Padding of each iteration variable.")),
        Results(), None, "Pad the iteration domain of an einsum block.", n_inputs=1, n_attrs=1),
    Instruction(
        "rolling_buffer", "RollingBuffer", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("write_buffer_index", "int", At(0), doc="Which write buffer.")),
        Results(), None, "Turn a buffer into a rolling (circular) buffer.", n_inputs=1, n_attrs=1),
    Instruction(
        "unsafe_hide_buffer_access", "UnsafeHideBufferAccess", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("buf_type", "buffer_kind", In(1), doc="\"read\" or \"write\"."),
         P("buf_index_array", "list[int]", In(2), doc="Indices of the buffers to hide.")),
        Results(), None, "Hide buffer accesses from the block's signature (unsafe).", n_inputs=3),
    Instruction(
        "annotate_buffer_access", "AnnotateBufferAccess", False,
        (P("block", "block", In(0), doc=_BLOCK),
         P("buffer", "buffer", In((1, 2)), doc="read(i) or write(i)."),
         P("gen_new_ranges", "index_map", In(3), doc="Maps iteration variables to the accessed ranges.")),
        Results(), None, "Declare the region a block accesses in a buffer.", n_inputs=4),
    # -- postprocessing ----------------------------------------------------------------
    Instruction(
        "enter_postproc", "EnterPostproc", False, (), Results(), None,
        "Start the postprocessing section: instructions that MetaSchedule's postprocessors added.",
        n_inputs=0, section="postproc"),
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
    "lookup": ("get_sblock", "get_loops", "get_child_blocks", "get_producers", "get_consumers",
               "get_output_blocks"),
    "sampling": ("sample_categorical", "sample_perfect_tile", "sample_partitioned_tile", "sample_compute_location"),
    "loop_structure": ("split", "loop_partition", "merge", "fuse", "reorder", "add_unit_loop"),
    "loop_kind": ("parallel", "vectorize", "unroll"),
    "thread_binding": ("bind",),
    "cache": ("cache_read", "cache_write", "cache_inplace", "cache_index", "read_at", "write_at"),
    "compute_location": ("compute_at", "reverse_compute_at", "compute_inline", "reverse_compute_inline",
                         "fuse_reduction_epilogue"),
    "reduction": ("decompose_reduction", "rfactor"),
    "layout": ("transform_layout", "transform_block_layout", "storage_align", "set_scope", "reindex", "pad_einsum",
               "reindex_cache_read", "reindex_cache_write", "reorder_block_iter_var", "rolling_buffer",
               "unsafe_set_dtype", "annotate_buffer_access", "unsafe_hide_buffer_access", "decompose_padding"),
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
    "cache_stage": frozenset({"compute_at", "reverse_compute_at", "fuse", "split", "bind", "vectorize", "annotate",
                              "unannotate", "storage_align"}),
    # compute a block where another reads its output (the others where it reads its input)
    "producer_side": frozenset({"compute_inline", "compute_at"}),
    "inline": frozenset({"compute_inline", "reverse_compute_inline"}),
    # the schedule model never writes these: they can change results (unsafe_*), need registered
    # intrinsics (tensorize), or MetaSchedule never writes them on the targets it is trained for
    "not_decoded": frozenset({"unsafe_set_dtype", "unsafe_hide_buffer_access", "tensorize", "cache_index",
                              "enter_postproc", "sample_partitioned_tile", "loop_partition", "merge"}),
}


def in_group(inst: Instruction, group: str) -> bool:
    """Whether an instruction is in a family or a group of the table (KeyError: no such group)."""
    if group in FAMILIES:
        return FAMILY_OF[inst.name] == group
    return inst.name in GROUPS[group]


# ---- MetaSchedule's annotation keys ------------------------------------------------------


@dataclass(frozen=True)
class AnnotationKey:
    """An annotation key MetaSchedule (TVM 0.27) writes or removes in the traces it makes.

    value:      "int" (an integer, or a sampled categorical's value), "str", "list" (of ints), "bool".
    family:     what it is about, in the words of the instruction families (explain groups by it).
    role:       within the family, what the value means when it matters ("max_step", ...).
    decoded:    the schedule model may write it (MetaSchedule writes it on CPUs and on GPUs
                without tensor cores, the targets the model is trained on).
    vocabulary: one token of the model's tokenizer. Fixed with the shipped weights: changing it
                changes every later token id.
    """

    key: str
    value: str
    writer: str
    family: str
    role: str = ""
    decoded: bool = True
    vocabulary: bool = True


_MS_UNROLL = "ParallelizeVectorizeUnroll"
_MS_TILING = "MultiLevelTiling"
ANNOTATION_KEYS: tuple[AnnotationKey, ...] = (
    AnnotationKey("meta_schedule.unroll_explicit", "int", _MS_UNROLL, "unroll", "max_step_explicit"),
    AnnotationKey("meta_schedule.unroll_implicit", "int", _MS_UNROLL, "unroll", "max_step_implicit"),
    AnnotationKey("meta_schedule.vectorize", "int", _MS_UNROLL, "vectorize", "max_extent"),
    AnnotationKey("meta_schedule.parallel", "int", _MS_UNROLL, "parallel", "max_extent"),
    AnnotationKey("meta_schedule.cooperative_fetch", "int", _MS_TILING + " (GPU shared-memory reuse)", "cache",
                  "vector_lanes"),
    AnnotationKey("meta_schedule.random_compute_producer", "int", "AddRFactor", "compute_location"),
    AnnotationKey("meta_schedule.thread_extent_low_inclusive", "int", _MS_TILING + " (GPU)", "thread_binding",
                  "thread_extent"),
    AnnotationKey("meta_schedule.thread_extent_high_inclusive", "int", _MS_TILING + " (GPU)", "thread_binding",
                  "thread_extent"),
    AnnotationKey("pragma_auto_unroll_max_step", "int", "RewriteParallelVectorizeUnroll (postprocessor)", "unroll",
                  "max_step"),
    AnnotationKey("pragma_unroll_explicit", "int", "RewriteParallelVectorizeUnroll (postprocessor)", "unroll",
                  "explicit"),
    AnnotationKey("meta_schedule.tiling_structure", "str", _MS_TILING, "tiling", "structure"),
    AnnotationKey("schedule_rule", "str", "the space generator (removes a workload's own rule marker)", "rule",
                  vocabulary=False),
    AnnotationKey("software_pipeline_stage", "list", _MS_TILING + " (GPU software pipeline)", "pipeline",
                  vocabulary=False),
    AnnotationKey("software_pipeline_order", "list", _MS_TILING + " (GPU software pipeline)", "pipeline",
                  vocabulary=False),
    AnnotationKey("software_pipeline_async_stages", "list", _MS_TILING + " (GPU software pipeline)", "pipeline",
                  vocabulary=False),
    AnnotationKey("meta_schedule.auto_tensorize", "str", "MultiLevelTilingTensorCore", "tensorize", decoded=False),
    AnnotationKey("meta_schedule.auto_tensorize_init", "str", "MultiLevelTilingTensorCore", "tensorize",
                  decoded=False, vocabulary=False),
    AnnotationKey("meta_schedule.layout_rewrite_preproc", "bool", "RewriteLayout (postprocessor)", "layout",
                  decoded=False),
)
ANNOTATION: dict[str, AnnotationKey] = {a.key: a for a in ANNOTATION_KEYS}


def annotation_keys(family: Optional[str] = None, role: Optional[str] = None) -> tuple[str, ...]:
    """The keys of one family (and role), in table order."""
    return tuple(a.key for a in ANNOTATION_KEYS
                 if (family is None or a.family == family) and (role is None or a.role == role))


# ---- positions in trace JSON ---------------------------------------------------------------
#: One instruction of trace JSON: [ /* 0 */ kind, /* 1 */ inputs, /* 2 */ attrs, /* 3 */ outputs ].
JSON_KIND, JSON_INPUTS, JSON_ATTRS, JSON_OUTPUTS = 0, 1, 2, 3


@dataclass(frozen=True)
class TraceRow:
    """One instruction of trace JSON read by the table: the only reader of JSON positions outside
    the codec. `entry` is None for a kind the table does not know."""

    entry: Optional[Instruction]
    kind: str
    inputs: list
    attrs: list
    outputs: list

    def arg(self, name: str, default: Any = None) -> Any:
        """The raw JSON of parameter `name` (a flattened rest parameter: the list from its slot on)."""
        p = self.entry.param(name) if self.entry is not None else None
        if p is None or p.slot.section == "decision":
            return default
        values = self.inputs if p.slot.section == "inputs" else self.attrs
        idx = p.slot.index
        if isinstance(idx, tuple):
            return [values[i] for i in idx] if max(idx) < len(values) else default
        if p.slot.rest:
            return list(values[idx:])
        return values[idx] if idx < len(values) else default


def trace_row(js: list) -> TraceRow:
    """Read one instruction of trace JSON (`[kind, inputs, attrs, outputs]`)."""
    kind = js[JSON_KIND]
    return TraceRow(BY_KIND.get(kind), kind, list(js[JSON_INPUTS]), list(js[JSON_ATTRS]), list(js[JSON_OUTPUTS]))


# ---- the explanation graph ---------------------------------------------------------
# Entries of the `explain:` section. They never affect the trace a script encodes.


@dataclass(frozen=True)
class ExplainKind:
    name: str
    doc: str
    links: dict[str, tuple[str, ...]] = field(default_factory=dict)  # keyword -> kinds it may point to
    free_data: bool = False  # accepts other keyword arguments with literal values


EXPLAIN_KINDS: dict[str, ExplainKind] = {
    k.name: k
    for k in (
        ExplainKind("fact", "A fact about the program, e.g. loop extents or arithmetic intensity.",
                    {"about": ("instruction",)}, free_data=True),
        ExplainKind("rationale", "Why a group of instructions was chosen.",
                    {"because": ("fact",), "produces": ("instruction",)}),
        ExplainKind("effect", "The expected effect of a choice.",
                    {"of": ("rationale",)}, free_data=True),
    )
}

#: Header directives.
DIRECTIVES: dict[str, str] = {
    "workload": "The workload file (relative path) the script schedules.",
    "target": "The target: a tag string such as \"nvidia/nvidia-h100\", or a JSON object.",
}

#: Names that cannot be bound by a script.
RESERVED = frozenset({"None", "True", "False", "inf", "nan", "lambda", "read", "write", "_"} | set(DTYPES))
