"""Caches: a buffer staged through shared memory or registers, with the instructions on its stage."""

from __future__ import annotations

import math

from dragon_dsl.explain.graph import dims, fmt
from dragon_dsl.explain.rules.base import Explainer, refs
from dragon_dsl.language.table import INST, in_group


def find_caches(x: Explainer):
    for i, inst in enumerate(x.p.instructions):
        if in_group(inst.entry, "cache"):
            for o in inst.outputs:
                if o in x.block_of:
                    x.cache_names[o] = x.block_of[o]
            x.cache_stages.append(i)


def caches(x: Explainer):
    stages = x.cache_stages
    names = set(x.cache_names.values())
    members: dict[str, list[int]] = {n: [] for n in names}
    for i, inst in enumerate(x.p.instructions):
        if i in x.claimed or not in_group(inst.entry, "cache_stage"):
            continue
        first = next((r for param in inst.entry.params for r in refs(inst.args.get(param.name))), None)
        owner = (x.block_of.get(first) or x.origin.get(first)) if first else None
        if owner not in names:
            continue
        members[owner].append(i)
        if inst.entry is INST.annotate:
            members[owner] += [x.p.definitions[r][2] for r in refs(inst.args.get("value")) if r in x.p.definitions]
    allocs = {a.name: a for a in (x.si.allocations if x.si else [])}
    shared_total = sum(a.bytes for a in allocs.values() if a.scope.startswith("shared"))
    for i in stages:
        inst = x.p.instructions[i]
        out = next((o for o in inst.outputs if o in x.cache_names), None)
        name = x.cache_names.get(out) if out else None
        scope = str(inst.args.get("storage_scope", ""))
        consumer = x.block_name(inst.args.get("block"))
        info = x.wl.blocks.get(consumer) if (x.wl and consumer) else None
        buffer = None
        if info is not None:
            side = info.reads if in_group(inst.entry, "read_cache") else info.writes
            idx = inst.args.get("read_buffer_index", inst.args.get("write_buffer_index", 0))
            if isinstance(idx, int) and 0 <= idx < len(side):
                buffer = side[idx].buffer
        because = [x.block_fact.get(consumer) if consumer else None]
        alloc = allocs.get(name) if name else None
        if alloc is not None:
            text = f"{alloc.name} is a {alloc.scope} buffer of {dims(alloc.shape)} {alloc.dtype}: {alloc.bytes} bytes"
            data = {"buffer": alloc.name, "scope": alloc.scope, "shape": list(alloc.shape), "bytes": alloc.bytes}
            if alloc.scope.startswith("shared") and x.tgt.max_shared_memory_per_block:
                text += (
                    f"; all shared buffers of the kernel take {shared_total} of "
                    f"{x.tgt.max_shared_memory_per_block} bytes per block"
                )
                data["shared_total"] = shared_total
            because.append(x.fact(text, [out], **data))
        tile = x.tile.get(consumer or "", {})
        if tile:
            because.append(tile["fact"])
        idx = [i] + members.get(name, [])
        effects = []
        what = buffer or (name or "a buffer")
        if in_group(inst.entry, "read_cache") and inst.entry is not INST.cache_inplace and scope.startswith("shared"):
            why = (
                f"stage {what} in shared memory for block {consumer}: the threads of a block fetch the tile "
                "cooperatively once and all of them read it from there"
            )
            reuse = tile.get("reuse", {}).get(buffer) if tile else None
            if reuse:
                effects.append(
                    (
                        f"each element of {what} fetched into shared memory is read {reuse} times from it: "
                        f"{reuse}x fewer global loads of {what}",
                        {"reuse": reuse, "fewer_global_loads": reuse},
                    )
                )
        elif in_group(inst.entry, "write_cache") and scope.startswith("local"):
            red = math.prod(a.extent for a in info.axes if a.kind == "reduction") if info else 1
            why = f"accumulate {what} of block {consumer} in registers and write each output back once"
            if red > 1:
                effects.append(
                    (
                        f"one global store per output of {what} instead of one per each of the {red} reduction steps",
                        {"fewer_global_stores": red},
                    )
                )
        elif in_group(inst.entry, "write_cache"):
            why = f"compute block {consumer} into a {scope} staging buffer and copy {what} out tile by tile"
            if tile:
                effects.append(
                    (
                        f"the copy-out of {what} runs over whole tiles of {tile['fact'].data.get('tile_bytes')} bytes",
                        {"tile_bytes": tile["fact"].data.get("tile_bytes")},
                    )
                )
        else:
            why = f"keep {what} of block {consumer} in a {scope or 'separate'} buffer ({inst.entry.name})"
        lanes = _fetch_lanes(x, members.get(name, []))
        if lanes:
            effects.append((f"the copy of {what} moves {lanes} elements per vector access", {"lanes": lanes}))
        if alloc is not None and alloc.scope != "global" and buffer and x.wl:
            whole = next((b for b in x.wl.params if b.name == buffer), None) or x.wl.intermediates.get(buffer)
            if whole is not None and whole.bytes > alloc.bytes:
                effects.append(
                    (
                        f"the {alloc.scope} copy holds {alloc.bytes} of {whole.bytes} bytes of {buffer}: "
                        f"{fmt(whole.bytes / alloc.bytes)}x smaller",
                        {"smaller_by": whole.bytes / alloc.bytes},
                    )
                )
        x.rationale(why, because, idx, effects)


def _fetch_lanes(x: Explainer, indices) -> int | None:
    for i in indices:
        inst = x.p.instructions[i]
        if inst.entry is INST.vectorize:
            st = x.loop(refs(inst.args.get("loop"))[0])
            if st is not None and st.extent:
                return st.extent
    return None
