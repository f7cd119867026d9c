"""The rules: from a checked program and what TVM reported, facts, rationales and effects.

Plain Python over `dragon_dsl.explain.info` records; no TVM. Every number
written here is computed from the workload (block axes, buffers, TVM's FLOP
estimate), from the script (tile decisions, sampled values, annotations) or
from the replayed schedule (loop extents, thread extents, compacted buffers).

One module per family of instructions (the families and the annotation keys are
the instruction table's, `dragon_dsl.language.table.FAMILIES` and `ANNOTATION_KEYS`):
multi-level tiling, thread binding, staging a buffer through a cache
(shared/local), fusion by compute-at or inlining, rfactor and reduction
decomposition, unrolling, vectorization and parallelization, layout and
tensorization. A rationale `produces` the results of its instructions (the
label, when the script has one); an instruction without results (bind, reorder,
compute_at...) is reached through the result it acts on, so the formal part of
the script never changes. Families run in a fixed order: an instruction that an
earlier family explained (`Explainer.claimed`) is not explained again.
"""

from __future__ import annotations

from dragon_dsl.explain.graph import Entry
from dragon_dsl.explain.rules import binding, caches, facts, fusion, layout, loop_kinds, reductions, tiling
from dragon_dsl.explain.rules.base import Explainer
from dragon_dsl.language.check import Program

#: The order in which the families' rules run (facts first; later rules see what earlier ones claimed).
RULES = (
    caches.find_caches,
    facts.workload_facts,
    facts.target_fact,
    facts.launch_facts,
    tiling.tiling,
    binding.binding,
    caches.caches,
    fusion.fusion,
    reductions.reductions,
    loop_kinds.loop_annotations,
    layout.layout,
)


def build(program: Program, wl, si, tgt) -> list[Entry]:
    x = Explainer(program, wl, si, tgt)
    for rule in RULES:
        rule(x)
    out = list(x.facts)
    for r, effects in x.groups:
        out.append(r)
        out.extend(effects)
    return out
