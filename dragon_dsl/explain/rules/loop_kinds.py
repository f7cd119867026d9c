"""Loop kinds: unrolling, vectorization, parallelization and software pipelining, by annotation or instruction."""

from __future__ import annotations

from dragon_dsl.explain.graph import fmt
from dragon_dsl.explain.info import dtype_bytes
from dragon_dsl.explain.rules.base import Explainer, refs
from dragon_dsl.language.check import BoundInst
from dragon_dsl.language.table import ANNOTATION, INST, in_group
from dragon_dsl.language.values import Ref


def loop_annotations(x: Explainer):
    unroll, vec, par, pipe = [], [], [], []
    for i, inst in enumerate(x.p.instructions):
        if i in x.claimed:
            continue
        entry, key = inst.entry, inst.args.get("key")
        family = (
            ANNOTATION[key].family
            if in_group(entry, "annotation") and isinstance(key, str) and key in ANNOTATION
            else None
        )
        if family == "unroll" or entry is INST.unroll:
            unroll.append(i)
        elif family == "vectorize" or entry is INST.vectorize:
            vec.append(i)
        elif family == "parallel" or entry is INST.parallel:
            par.append(i)
        elif family == "pipeline":
            pipe.append(i)
    if unroll:
        _unroll(x, unroll)
    if vec:
        _vectorize(x, vec)
    if par:
        _parallel(x, par)
    if pipe:
        x.rationale(
            "software-pipeline the loop: loads of the next stage overlap the computation of this one", [], pipe, []
        )


def _annotated_value(x: Explainer, inst: BoundInst):
    v = inst.args.get("value")
    if isinstance(v, Ref) and v.name in x.p.definitions:
        maker = x.p.instructions[x.p.definitions[v.name][2]]
        if maker.entry is INST.sample_categorical:
            cands, d = maker.args.get("candidates", []), maker.args.get("decision")
            if isinstance(d, int) and 0 <= d < len(cands):
                return cands[d], x.p.definitions[v.name][2]
        return None, x.p.definitions[v.name][2]
    return (v if isinstance(v, int) and not isinstance(v, bool) else None), None


def _annotated_limits(x: Explainer, indices, idx: list) -> list:
    """The known values of the `annotate` instructions among `indices`, in order; the instructions
    that sampled a value join `idx` (the rationale produces them too)."""
    values = []
    for i in indices:
        inst = x.p.instructions[i]
        if inst.entry is INST.annotate:
            value, maker = _annotated_value(x, inst)
            if maker is not None:
                idx.append(maker)
            if value is not None:
                values.append(value)
    return values


def _unroll(x: Explainer, indices):
    steps, explicit, idx, loops = [], None, list(indices), []
    for i in indices:
        inst = x.p.instructions[i]
        key = inst.args.get("key")
        role = ANNOTATION[key].role if isinstance(key, str) and key in ANNOTATION else None
        if inst.entry is INST.unroll:
            loops += refs(inst.args.get("loop"))
            continue
        if inst.entry is not INST.annotate:
            continue
        value, maker = _annotated_value(x, inst)
        if maker is not None:
            idx.append(maker)
        if role in ("max_step", "max_step_explicit", "max_step_implicit"):
            if value is not None and value not in steps:
                steps.append(value)
            if role != "max_step":  # MetaSchedule's keys say which unrolling; the pragma does not
                explicit = role == "max_step_explicit"
        elif role == "explicit" and value is not None:
            explicit = bool(value)
    because = []
    if steps:
        because.append(
            x.fact(
                f"auto-unroll limit {max(steps)} steps"
                + ("" if explicit is None else (" (explicit)" if explicit else " (implicit)")),
                max_step=max(steps),
            )
        )
    for var in loops:
        st = x.loop(var)
        if st is not None:
            because.append(
                x.fact(
                    f"loop {st.name} is unrolled ({st.extent} iterations)",
                    [var],
                    loop=st.name,
                    extent=st.extent,
                    kind=st.kind,
                )
            )
    why = "unroll inner loops: straight-line code without loop counters, and independent steps the compiler can interleave"
    effects = []
    if steps and max(steps) > 0:
        effects.append((f"loops with at most {max(steps)} iterations in total are unrolled", {"max_step": max(steps)}))
    elif steps:
        effects.append(("the limit 0 leaves loops rolled", {"max_step": 0}))
    x.rationale(why, because, idx, effects)


def _loops_of(x: Explainer, indices, entry):
    """(variable, state) of the loops that instructions `entry` among `indices` act on."""
    out = []
    for i in indices:
        inst = x.p.instructions[i]
        if inst.entry is entry:
            for var in refs(inst.args.get("loop")):
                st = x.loop(var)
                if st is not None:
                    out.append((var, st))
    return out


def _vectorize(x: Explainer, indices):
    because, effects, idx = [], [], list(indices)
    limits = _annotated_limits(x, indices, idx)
    if limits:
        because.append(
            x.fact(f"vectorize limit: innermost loops of up to {max(limits)} iterations", max_extent=max(limits))
        )
    lanes = []
    for var, st in _loops_of(x, indices, INST.vectorize):
        blk = x.origin.get(var)
        info = x.wl.blocks.get(blk) if (x.wl and blk) else None
        width = st.extent * dtype_bytes(info.dtype) if (info and st.extent) else None
        text = f"loop {st.name} is vectorized: {st.extent} lanes"
        data = {"loop": st.name, "extent": st.extent, "kind": st.kind}
        if width:
            text += f" of {info.dtype} = {width} bytes"
            data["bytes"] = width
        because.append(x.fact(text, [var], **data))
        if st.extent:
            lanes.append(st.extent)
    if lanes:
        effects.append((f"one vector instruction handles up to {max(lanes)} elements", {"lanes": max(lanes)}))
    x.rationale(
        "vectorize innermost contiguous loops: one SIMD instruction per group of elements", because, idx, effects
    )


def _parallel(x: Explainer, indices):
    because, effects, idx = [], [], list(indices)
    for value in _annotated_limits(x, indices, idx):
        because.append(x.fact(f"parallel limit: outer loops of up to {value} iterations", max_extent=value))
    cores = x.tgt.cores
    if cores:
        because.append(x.target)
    for var, st in _loops_of(x, indices, INST.parallel):
        because.append(
            x.fact(
                f"loop {st.name} runs in parallel: {st.extent} iterations",
                [var],
                loop=st.name,
                extent=st.extent,
                kind=st.kind,
            )
        )
        if cores and st.extent:
            per = -(-st.extent // cores)
            effects.append(
                (
                    f"{st.extent} iterations over {cores} cores: {per} per core, "
                    f"{fmt(100 * st.extent / (per * cores))}% balanced",
                    {"per_core": per, "balance": st.extent / (per * cores)},
                )
            )
    x.rationale("parallelize outer loops across the CPU cores", because, idx, effects)
