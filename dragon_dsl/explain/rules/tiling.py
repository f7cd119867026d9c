"""Multi-level tiling: sampled tile factors, the splits and the reorder that use them."""

from __future__ import annotations

import math

from dragon_dsl.explain.graph import dims
from dragon_dsl.explain.info import dtype_bytes
from dragon_dsl.explain.rules.base import Explainer, refs
from dragon_dsl.language.table import INST, annotation_keys, in_group

_STRUCTURE_KEYS = annotation_keys("tiling", "structure")  # the tiling structure MultiLevelTiling chose


def _tiled_blocks(x: Explainer):
    """The instructions that tile each block (its samples, the splits by them, reorders, structure
    annotations), each axis's first sampled tile factors and kind, and each block's structure."""
    by_block: dict[str, list[int]] = {}
    tiles: dict[str, dict[str, list[int]]] = {}
    kinds: dict[str, dict[str, str]] = {}
    sampled: dict[str, int] = {}  # value variable -> sampling instruction
    structure: dict[str, str] = {}
    for i, inst in enumerate(x.p.instructions):
        entry = inst.entry
        if in_group(entry, "tile_sampling"):
            loop = refs(inst.args.get("loop"))
            if not loop:
                continue
            blk = x.origin.get(loop[0])
            state = x.loop(loop[0], final=False)
            axis = state.axes[0] if state and len(state.axes) == 1 else (state.name if state else loop[0])
            decision = inst.args.get("decision")
            if blk is None or not isinstance(decision, list):
                continue
            by_block.setdefault(blk, []).append(i)
            # an axis is tiled by its first sample; a later one splits one of its tile loops again
            # (an outer tile spread over cores, a unit loop) and must not stand for the axis's tiling
            tiles.setdefault(blk, {}).setdefault(axis, list(decision))
            kinds.setdefault(blk, {}).setdefault(axis, state.axis_kinds[0] if state and state.axis_kinds else "spatial")
            for o in inst.outputs:
                sampled[o] = i
        elif entry is INST.split:
            factors = refs(inst.args.get("factors"))
            # a split by sampled factors, or by constants, of a loop of a tiled block
            if all(f in sampled for f in factors):
                blk = x.origin.get(refs(inst.args.get("loop"))[0]) if refs(inst.args.get("loop")) else None
                if blk in by_block:
                    by_block[blk].append(i)
        elif entry is INST.reorder:
            loops = refs(inst.args.get("loops"))
            blks = {x.origin.get(v) for v in loops}
            if len(blks) == 1 and next(iter(blks)) in by_block:
                by_block[next(iter(blks))].append(i)
        elif entry is INST.annotate and inst.args.get("key") in _STRUCTURE_KEYS:
            blk = x.block_name(inst.args.get("target"))
            if blk and isinstance(inst.args.get("value"), str):
                structure[blk] = inst.args["value"]
                by_block.setdefault(blk, []).append(i)
    return by_block, tiles, kinds, structure


def tiling(x: Explainer):
    by_block, tiles, kinds, structure = _tiled_blocks(x)
    for blk, indices in by_block.items():
        if blk not in tiles:
            continue
        info = x.wl.blocks.get(blk) if x.wl else None
        tile = {a: math.prod(f[1:]) for a, f in tiles[blk].items()}
        outer = math.prod(f[0] for f in tiles[blk].values())
        spatial_tile = {a: t for a, t in tile.items() if kinds[blk].get(a) == "spatial"}
        outputs = math.prod(spatial_tile.values()) if spatial_tile else 1
        dtype = info.dtype if info else "float32"
        text = (
            f"block {blk} is tiled "
            + ", ".join(f"{a} as {f}" for a, f in tiles[blk].items())
            + f"; one outer tile covers {dims(spatial_tile.values()) or 1} outputs "
            f"({outputs * dtype_bytes(dtype)} bytes), {outer} outer tiles"
        )
        data = {
            "block": blk,
            "tiles": tiles[blk],
            "tile": spatial_tile,
            "tile_bytes": outputs * dtype_bytes(dtype),
            "outer_tiles": outer,
        }
        if blk in structure:
            data["structure"] = structure[blk]
            text += f"; structure {structure[blk]}"
        f = x.fact(
            text,
            [x.link(i)[0] for i in indices if in_group(x.p.instructions[i].entry, "sampling") and x.link(i)],
            **data,
        )
        reuse = {}
        if info:
            axis_tile = {a.name: tile.get(a.name, a.extent) for a in info.axes}
            for acc in info.reads:
                r = math.prod(t for a, t in axis_tile.items() if a not in acc.axes)
                if r > 1:
                    reuse.setdefault(acc.buffer, r)
        x.tile[blk] = {"fact": f, "reuse": reuse, "tiles": tiles[blk], "kinds": kinds[blk], "tile": tile}
        levels = max(len(f) for f in tiles[blk].values())
        why = (
            f"multi-level tiling of block {blk}: {levels} levels per axis so that outer tiles spread over "
            + ("thread blocks and threads" if x.tgt.gpu else "cores")
            + " and inner tiles stay in fast memory"
        )
        effects = []
        if reuse:
            effects.append(
                (
                    f"within one outer tile of {blk} each element of "
                    + ", ".join(f"{b} serves {r} iterations" for b, r in reuse.items())
                    + " instead of being fetched again",
                    {"reuse": reuse},
                )
            )
        effects.append(
            (
                f"{outer} independent outer tiles of {outputs} outputs each",
                {"outer_tiles": outer, "tile_outputs": outputs},
            )
        )
        x.rationale(why, [x.block_fact.get(blk), f], indices, effects)
