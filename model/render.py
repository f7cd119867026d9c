"""The prompt: a compact, deterministic rendering of a workload (and a target).

    target llvm
    buffer A float32[32,32] param
    buffer temp float32[32,32] alloc
    block multiply iters S32 S32 R32 reads A[v0,v2] B[v1,v2] writes temp[v0,v1] init
    block add iters S32 S32 reads temp[v0,v1] C[v0,v1] writes D[v0,v1]

Blocks come in program order (depth first), each with its iteration kinds and
extents (S spatial, R reduction, O other), the buffers it reads and writes with
index expressions written over its own iteration variables `v0, v1, ...`.
Loops above a block are not rendered: in the workloads the model sees, every
block sits under a perfect loop nest over its iteration variables, and the
schedule's `get_loops` results follow from the block's iterations.

The rendering is what the model conditions on, so it must not depend on
anything but the module's structure (no object addresses, no dictionary order).
"""

from __future__ import annotations

import re
from typing import Any

ITER_KINDS = {0: "S", 2: "R"}  # TVM's IterVar types: 0 DataPar, 2 CommReduce; others are written O


def target_kind(target: Any) -> str:
    """`llvm` or `cuda` (or another TVM target kind) from a tag, a JSON object or a short name."""
    if isinstance(target, dict):
        return str(target.get("kind", "llvm"))
    if target is None:
        return "llvm"
    text = str(target).strip()
    if text.startswith("{"):
        import json

        try:
            return str(json.loads(text).get("kind", "llvm"))
        except (ValueError, AttributeError):
            return "llvm"
    if text.startswith(("nvidia/", "cuda")):
        return "cuda"
    return text.split()[0].split("/")[0] or "llvm"


def render_workload(workload, target: Any = "llvm") -> str:
    """The prompt text for a workload (TVMScript text, a path or an IRModule) on a target."""
    mod = _module(workload)
    func = mod["main"]
    lines = [f"target {target_kind(target)}"]
    params = [str(p.name) for p in func.params]
    blocks = _blocks(mod)
    buffers: dict[str, Any] = {}
    for b in blocks:
        for buf in b["buffers"]:
            buffers.setdefault(str(buf.name), buf)
    # parameters in signature order, then the intermediate buffers in program order
    order = [n for n in params if n in buffers] + [n for n in buffers if n not in params]
    for name in order:
        buf = buffers[name]
        shape = ",".join(_expr(s, {}) for s in buf.shape)
        lines.append(f"buffer {name} {buf.dtype}[{shape}] {'param' if name in params else 'alloc'}")
    for b in blocks:
        if b["name"] == "root":
            continue
        parts = [f"block {b['name']}", "iters"] + b["iters"]
        if b["reads"]:
            parts += ["reads"] + b["reads"]
        if b["writes"]:
            parts += ["writes"] + b["writes"]
        if b["init"]:
            parts.append("init")
        lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


# ---- walking the module ------------------------------------------------------------------


def _module(workload):
    from dragon_dsl.tvm.workload import load_workload

    return load_workload(workload)


def _blocks(mod) -> list[dict]:
    """The blocks of `main` in program order (the root first), through the TVM bridge's block walk."""
    from dragon_dsl.tvm.blocks import block_rvs, schedule_of

    sch = schedule_of(mod)
    out: list[dict] = []
    for rv in block_rvs(sch):
        blk = sch.get(rv)
        names = {iv.var.name: f"v{i}" for i, iv in enumerate(blk.iter_vars)}
        iters = [f"{ITER_KINDS.get(int(iv.iter_type), 'O')}{_expr(iv.dom.extent, {})}" for iv in blk.iter_vars]
        buffers = list(blk.alloc_buffers) + [r.source for r in list(blk.reads) + list(blk.writes)]
        out.append(
            {
                "name": str(blk.name_hint),
                "iters": iters,
                "reads": [_region(r, names) for r in blk.reads],
                "writes": [_region(r, names) for r in blk.writes],
                "init": blk.init is not None,
                "buffers": buffers,
            }
        )
    return out


def _region(region, names: dict) -> str:
    idx = []
    for r in region.region:
        text = _expr(r.min, names)
        extent = _expr(r.extent, names)
        idx.append(text if extent == "1" else f"{text}:{extent}")
    return f"{region.source.name}[{','.join(idx)}]"


_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_SPACES = re.compile(r"\s+")


def _expr(expr, names: dict) -> str:
    """An index expression in TVM's printed form, iteration variables renamed, no spaces,
    no `T.` prefixes and no dtype casts around plain integers."""
    text = str(expr)
    text = re.sub(r"T\.int(?:32|64)\((-?\d+)\)", r"\1", text)
    text = text.replace("T.", "")
    text = _WORD.sub(lambda m: names.get(m.group(0), m.group(0)), text)
    return _SPACES.sub("", text)
