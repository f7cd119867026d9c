"""What the checks ask of a block realize: whether it has a `where` predicate (`predicated`) and the
bindings of its reduction iterators (`reduce_values`)."""

from __future__ import annotations


def predicated(realize) -> bool:
    """Whether a block realize has a `where` predicate (anything but the constant true)."""
    import tvm

    pred = realize.predicate
    return not (isinstance(pred, tvm.tirx.IntImm) and pred.value == 1)


def reduce_values(realize) -> list:
    """The bindings of a block realize's reduction iterators."""
    import tvm

    return [
        value
        for iv, value in zip(realize.block.iter_vars, realize.iter_values)
        if iv.iter_type == tvm.tirx.IterVar.CommReduce
    ]
