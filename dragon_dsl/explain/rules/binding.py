"""GPU thread binding: loops bound to thread axes, with the fuses that made them."""

from __future__ import annotations

import math

from dragon_dsl.explain.graph import fmt
from dragon_dsl.explain.rules.base import Explainer, refs
from dragon_dsl.language.table import INST, annotation_keys

_THREAD_EXTENT_KEYS = annotation_keys("thread_binding", "thread_extent")  # MultiLevelTiling's bounds


def binding(x: Explainer):
    groups: dict[str, list[int]] = {}
    bound: dict[str, list[tuple[str, str]]] = {}
    defined_by = {o: i for i, inst in enumerate(x.p.instructions) for o in inst.outputs}
    for i, inst in enumerate(x.p.instructions):
        if inst.entry is not INST.bind or i in x.claimed:
            continue
        loop = refs(inst.args.get("loop"))
        if not loop:
            continue
        blk = x.origin.get(loop[0]) or "?"
        if x.is_cache_block(blk):
            continue  # cooperative fetch: explained with its cache stage
        groups.setdefault(blk, []).append(i)
        maker = defined_by.get(loop[0])
        if maker is not None and x.p.instructions[maker].entry is INST.fuse:
            groups[blk].append(maker)
        bound.setdefault(blk, []).append((loop[0], inst.args.get("thread_axis", "")))
    for i, inst in enumerate(x.p.instructions):
        if inst.entry is INST.annotate and inst.args.get("key") in _THREAD_EXTENT_KEYS:
            blk = x.block_name(inst.args.get("target"))
            if blk in groups:
                groups[blk].append(i)
    for blk, indices in groups.items():
        axes = bound[blk]
        extents = {}
        for var, tag in axes:
            st = x.loop(var)
            if st is not None and st.extent is not None:
                extents[tag] = st.extent
        kfacts = [f for k, f in x.kernel_facts if all(k.axes.get(t) == e for t, e in extents.items())] or [
            f for _, f in x.kernel_facts
        ]
        why = f"bind the outer loops of block {blk} to the GPU: " + ", ".join(f"{var} to {tag}" for var, tag in axes)
        effects = []
        threads = math.prod(e for t, e in extents.items() if t.startswith("threadIdx"))
        blocks = math.prod(e for t, e in extents.items() if t.startswith("blockIdx"))
        if any(t.startswith("threadIdx") for t in extents):
            warp = x.tgt.warp_size or 32
            warps = -(-threads // warp)
            data = {"threads": threads, "warps": warps, "lane_use": threads / (warps * warp)}
            text = f"{threads} threads per block = {warps} warp(s), {fmt(100 * threads / (warps * warp))}% of their lanes busy"
            if x.tgt.max_threads_per_block:
                data["thread_fraction"] = threads / x.tgt.max_threads_per_block
                text += f"; {fmt(100 * threads / x.tgt.max_threads_per_block)}% of the {x.tgt.max_threads_per_block}-thread limit"
            effects.append((text, data))
        if any(t.startswith("blockIdx") for t in extents):
            effects.append((f"{blocks} thread blocks run independently", {"blocks": blocks}))
        x.rationale(why, [x.block_fact.get(blk), x.target] + kfacts, indices, effects)
