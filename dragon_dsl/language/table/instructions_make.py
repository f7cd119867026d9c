"""The builders the instruction table's entries share: one shape of instruction (a cache, a
compute-at, a getter, an instruction on one loop or one block) made for several kinds, and the
parameter docs they repeat. The entries themselves live in the instructions_* modules."""

from __future__ import annotations

from dragon_dsl.language.table.schema import At, In, Instruction, Param, Results

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
