"""Compute location: inlining and compute-at of producers and consumers."""

from __future__ import annotations

from dragon_dsl.explain.graph import dims
from dragon_dsl.explain.rules.base import Explainer, refs
from dragon_dsl.language.table import INST, in_group


def fusion(x: Explainer):
    for i, inst in enumerate(x.p.instructions):
        entry = inst.entry
        if i in x.claimed or not in_group(entry, "compute_location"):
            continue
        ref = inst.args.get("block") or inst.args.get("epilogue_block")
        blk = x.block_name(ref)
        info = x.wl.blocks.get(blk) if (x.wl and blk) else None
        because = [x.block_fact.get(blk)] if blk else []
        idx = [i]
        loop = refs(inst.args.get("loop"))
        if loop and loop[0] in x.p.definitions:
            maker = x.p.definitions[loop[0]][2]
            if 0 <= maker < len(x.p.instructions) and x.p.instructions[maker].entry is INST.sample_compute_location:
                idx.append(maker)
        inter = None
        if info is not None and x.wl is not None:
            side = info.writes if in_group(entry, "producer_side") else info.reads
            inter = next((x.wl.intermediates[a.buffer] for a in side if a.buffer in x.wl.intermediates), None)
        effects = []
        if in_group(entry, "inline"):
            where = "its consumers" if in_group(entry, "producer_side") else "its producer"
            why = f"inline block {blk or '?'} into {where}: an elementwise step needs no loop nest or buffer of its own"
            if inter is not None:
                because.append(
                    x.fact(
                        f"{inter.name} is an intermediate buffer of {dims(inter.shape)} {inter.dtype}: "
                        f"{inter.bytes} bytes",
                        buffer=inter.name,
                        bytes=inter.bytes,
                        shape=list(inter.shape),
                    )
                )
                effects.append(
                    (
                        f"{inter.name} is never stored: {2 * inter.bytes} bytes of stores and loads saved",
                        {"bytes_saved": 2 * inter.bytes},
                    )
                )
        elif entry is INST.fuse_reduction_epilogue:
            why = f"fold the epilogue block {blk or '?'} into its reduction"
        else:
            st = x.loop(loop[0], final=False) if loop else None
            at = f"loop {st.name} (extent {st.extent})" if st else "the chosen loop"
            if in_group(entry, "producer_side"):
                why = f"compute producer block {blk or '?'} under {at}: each tile is made just before its consumer reads it"
            else:
                why = f"compute consumer block {blk or '?'} under {at}: each tile is used right after its producer makes it"
            decision = None
            if len(idx) > 1:
                decision = x.p.instructions[idx[1]].args.get("decision")
            if decision is not None:
                because.append(
                    x.fact(
                        f"the compute location of {blk} was sampled: decision {decision}",
                        [x.link(idx[1])[0]] if x.link(idx[1]) else [],
                        decision=decision,
                    )
                )
            allocs = {a.name: a for a in (x.si.allocations if x.si else [])}
            if inter is not None and inter.name in allocs and allocs[inter.name].bytes < inter.bytes:
                small = allocs[inter.name]
                effects.append(
                    (
                        f"{inter.name} shrinks from {inter.bytes} to {small.bytes} bytes and stays hot in cache",
                        {"bytes": small.bytes, "bytes_before": inter.bytes},
                    )
                )
        x.rationale(why, because, idx, effects)
