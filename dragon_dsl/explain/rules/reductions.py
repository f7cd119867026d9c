"""Reductions: rfactor and the decomposition of a reduction's initialisation."""

from __future__ import annotations

import math

from dragon_dsl.explain.rules.base import Explainer, refs
from dragon_dsl.language.table import INST


def reductions(x: Explainer):
    for i, inst in enumerate(x.p.instructions):
        entry = inst.entry
        if i in x.claimed:
            continue
        if entry is INST.rfactor:
            loop = refs(inst.args.get("loop"))
            st = x.loop(loop[0], final=False) if loop else None
            blk = x.origin.get(loop[0]) if loop else None
            ext = st.extent if st else None
            because = [x.block_fact.get(blk)] if blk else []
            if ext:
                because.append(
                    x.fact(
                        f"the reduction loop {st.name} of block {blk} has extent {ext}",
                        [loop[0]],
                        loop=st.name,
                        extent=ext,
                    )
                )
            why = f"rfactor the reduction of block {blk or '?'}: partial sums along {st.name if st else 'the loop'} become independent"
            effects = (
                [(f"{ext} partial results can be computed in parallel before a final reduction", {"partials": ext})]
                if ext
                else []
            )
            x.rationale(why, because, [i], effects)
        elif entry is INST.decompose_reduction:
            blk = x.block_name(inst.args.get("block"))
            loop = refs(inst.args.get("loop"))
            st = x.loop(loop[0], final=False) if loop else None
            why = (
                f"split the initialisation of block {blk or '?'} from its update, placed before loop "
                f"{st.name if st else '?'}"
            )
            info = x.wl.blocks.get(blk) if (x.wl and blk) else None
            red = math.prod(a.extent for a in info.axes if a.kind == "reduction") if info else None
            effects = (
                [
                    (
                        f"the accumulator is set once per output, not tested in each of the {red} reduction steps",
                        {"branches_removed": red},
                    )
                ]
                if red and red > 1
                else []
            )
            x.rationale(why, [x.block_fact.get(blk)] if blk else [], [i], effects)
