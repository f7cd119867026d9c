"""Layout and tensorization."""

from __future__ import annotations

from dragon_dsl.explain.rules.base import Explainer
from dragon_dsl.language.table import INST, in_group


def layout(x: Explainer):
    lay, tens = [], []
    for i, inst in enumerate(x.p.instructions):
        if i in x.claimed:
            continue
        if in_group(inst.entry, "layout"):
            lay.append(i)
        elif in_group(inst.entry, "tensorize"):
            tens.append(i)
    if lay:
        kinds = sorted({x.p.instructions[i].entry.name for i in lay})
        x.rationale("change data layout (" + ", ".join(kinds) + ") so that accesses follow the loop order", [], lay, [])
    if tens:
        intrins = sorted(
            {
                str(x.p.instructions[i].args.get("tensor_intrin"))
                for i in tens
                if x.p.instructions[i].entry is INST.tensorize
            }
        )
        because = [x.fact(f"tensor intrinsic {name}", intrinsic=name) for name in intrins]
        x.rationale("map an inner tile onto a hardware tensor intrinsic", because, tens, [])
