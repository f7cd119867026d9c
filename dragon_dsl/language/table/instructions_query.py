"""The getters (pure) and the samplers (pure, with decisions) of the instruction table.

Entries in TVM's order of concerns; `instructions` assembles the table from these modules in order.
"""

from __future__ import annotations

from dragon_dsl.language.table.instructions_make import _BLOCK, P, _getter
from dragon_dsl.language.table.schema import DECISION, At, In, Instruction, Results

QUERIES: tuple[Instruction, ...] = (
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
)
