"""Facts about the workload, the target and the kernels the replayed schedule launches."""

from __future__ import annotations

import math

from dragon_dsl.explain.graph import dims, fmt
from dragon_dsl.explain.rules.base import Explainer
from dragon_dsl.language.table import INST


def workload_facts(x: Explainer):
    wl = x.wl
    if wl is None:
        return
    about_block: dict[str, list[str]] = {}
    for _i, inst in enumerate(x.p.instructions):
        if inst.entry is INST.get_sblock:
            name = inst.args.get("name")
            about_block.setdefault(name, [])
            about_block[name] += [o for o in inst.outputs if o != "_"][:1]
    total = sum(b.bytes for b in wl.params)
    if total:
        text = f"main moves {total} bytes of arguments ({', '.join(f'{b.name} {dims(b.shape)} {b.dtype}' for b in wl.params)})"
        data = {"bytes": total, "buffers": {b.name: list(b.shape) for b in wl.params}}
        if wl.flops:
            text += f" and does {fmt(wl.flops)} flop: arithmetic intensity {fmt(wl.flops / total)} flop/byte"
            data.update(flops=wl.flops, intensity=wl.flops / total)
        x.workload = x.fact(text, **data)
    else:
        x.workload = None
    for b in wl.blocks.values():
        spatial = {a.name: a.extent for a in b.axes if a.kind == "spatial"}
        reduction = {a.name: a.extent for a in b.axes if a.kind == "reduction"}
        parts = []
        if spatial:
            parts.append("spatial " + ", ".join(f"{k}={v}" for k, v in spatial.items()))
        if reduction:
            parts.append("reduction " + ", ".join(f"{k}={v}" for k, v in reduction.items()))
        iters = math.prod(a.extent for a in b.axes) if b.axes else 1
        data = {"block": b.name, "spatial": spatial, "reduction": reduction, "dtype": b.dtype, "iterations": iters}
        text = f"block {b.name}: {'; '.join(parts) or 'no axes'}; {iters} iterations; {b.dtype}"
        reuse = {}
        for acc in b.reads:
            r = math.prod(a.extent for a in b.axes if a.name not in acc.axes)
            if r > 1 and acc.buffer not in reuse:
                reuse[acc.buffer] = r
        if reuse:
            text += "; each element of " + ", ".join(f"{k} is used {v} times" for k, v in reuse.items())
            data["reuse"] = reuse
        x.block_fact[b.name] = x.fact(text, about_block.get(b.name, []), **data)


def target_fact(x: Explainer):
    t = x.tgt
    data = {"kind": t.kind}
    # a tag names its kind ("nvidia/nvidia-h100 (cuda)"); a kind, or a JSON object whose options
    # follow as facts, is named by its kind alone (not "llvm (llvm)")
    named = t.text and t.text != t.kind and not t.text.lstrip().startswith("{")
    text = f"target {t.text} ({t.kind})" if named else f"target {t.kind}"
    if t.gpu:
        for key, value, words in (
            ("max_threads", t.max_threads_per_block, "threads per block"),
            ("max_shared", t.max_shared_memory_per_block, "bytes of shared memory per block"),
            ("warp", t.warp_size, "threads per warp"),
        ):
            if value:
                data[key] = value
                text += f"; {value} {words}"
    elif t.cores:
        data["cores"] = t.cores
        text += f"; {t.cores} cores"
    x.target = x.fact(text, **data)


def launch_facts(x: Explainer):
    x.kernel_facts = []
    if not x.si:
        return
    for k, kernel in enumerate(x.si.kernels):
        blocks, threads, vthreads = kernel.product("blockIdx"), kernel.product("threadIdx"), kernel.product("vthread")
        text = f"kernel {k}: {blocks} thread blocks of {threads} threads"
        if vthreads > 1:
            text += f", {vthreads} virtual threads each"
        text += " (" + ", ".join(f"{a}={e}" for a, e in kernel.axes.items()) + ")"
        x.kernel_facts.append(
            (kernel, x.fact(text, kernel=k, blocks=blocks, threads=threads, vthreads=vthreads, axes=dict(kernel.axes)))
        )
