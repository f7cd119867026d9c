"""The rules: from a checked program and what TVM reported, facts, rationales and effects.

Plain Python over `dragon_dsl.explain.info` records; no TVM. Every number
written here is computed from the workload (block axes, buffers, TVM's FLOP
estimate), from the script (tile decisions, sampled values, annotations) or
from the replayed schedule (loop extents, thread extents, compacted buffers).

Instructions are grouped by what they do to which block: multi-level tiling,
thread binding, staging a buffer through a cache (shared/local), fusion by
compute-at or inlining, rfactor, reduction decomposition, unrolling,
vectorization, parallelization, layout and tensorization. A rationale
`produces` the results of its instructions (the label, when the script has
one); an instruction without results (bind, reorder, compute_at...) is reached
through the result it acts on, so the formal part of the script never changes.
"""

from __future__ import annotations

import math
from typing import Optional

from dragon_dsl.check import BoundInst, Program
from dragon_dsl.explain.graph import Entry, dims, fmt, number
from dragon_dsl.explain.info import BlockInfo, LoopState, ScheduleInfo, TargetInfo, WorkloadInfo, dtype_bytes
from dragon_dsl.values import Ref

_UNROLL_KEYS = ("meta_schedule.unroll_explicit", "meta_schedule.unroll_implicit",
                "pragma_auto_unroll_max_step", "pragma_unroll_explicit")
_PIPELINE_KEYS = ("software_pipeline_stage", "software_pipeline_order", "software_pipeline_async_stages")
_LAYOUT = ("transform_layout", "transform_block_layout", "storage_align", "set_scope", "reindex", "pad_einsum",
           "reindex_cache_read", "reindex_cache_write", "reorder_block_iter_var", "rolling_buffer",
           "unsafe_set_dtype", "annotate_buffer_access", "unsafe_hide_buffer_access", "decompose_padding")
_STAGE_MEMBERS = ("compute_at", "reverse_compute_at", "fuse", "split", "bind", "vectorize", "annotate",
                  "unannotate", "storage_align")
_CACHES = ("cache_read", "cache_write", "read_at", "write_at", "cache_inplace", "cache_index")


def _refs(value) -> list[str]:
    if isinstance(value, Ref):
        return [value.name]
    if isinstance(value, list):
        out = []
        for v in value:
            out += _refs(v)
        return out
    return []


class Explainer:
    def __init__(self, program: Program, wl: Optional[WorkloadInfo], si: Optional[ScheduleInfo], tgt: TargetInfo):
        self.p = program
        self.wl = wl
        self.si = si if si is not None and si.ok else None
        self.tgt = tgt
        self.facts: list[Entry] = []
        self.groups: list[tuple[Entry, list[Entry]]] = []  # rationale, its effects
        self.block_of: dict[str, str] = {}  # block variable -> block name
        self.origin: dict[str, str] = {}  # loop variable -> name of the block whose loop it is
        self.block_fact: dict[str, Entry] = {}
        self.tile: dict[str, dict] = {}  # block name -> tiling summary
        self.claimed: set[int] = set()
        self._trace_names()

    # -- what names denote ---------------------------------------------------------

    def _trace_names(self):
        for var, state in ((self.si.final | self.si.first_seen).items() if self.si else ()):
            if isinstance(state, str):
                self.block_of.setdefault(var, state)
        for i, inst in enumerate(self.p.instructions):
            n = inst.entry.name
            if n == "get_sblock":
                for o in inst.outputs:
                    self.block_of.setdefault(o, inst.args.get("name", ""))
            elif n in ("get_loops",):
                blk = self.block_name(inst.args.get("block"))
                for o in inst.outputs:
                    if blk:
                        self.origin.setdefault(o, blk)
            elif n in ("split", "fuse", "loop_partition", "merge", "add_unit_loop"):
                src = _refs(inst.args.get("loop") or inst.args.get("loops") or inst.args.get("target"))
                blk = next((self.origin[s] for s in src if s in self.origin), None)
                if blk is None and src and src[0] in self.block_of:
                    blk = self.block_of[src[0]]
                for o in inst.outputs:
                    if blk:
                        self.origin.setdefault(o, blk)

    def block_name(self, ref) -> Optional[str]:
        if isinstance(ref, Ref):
            return self.block_of.get(ref.name)
        return None

    def loop(self, var: str, final: bool = True) -> Optional[LoopState]:
        if not self.si:
            return None
        state = (self.si.final.get(var) if final else None) or self.si.first_seen.get(var)
        return state if isinstance(state, LoopState) else None

    def link(self, i: int) -> list[str]:
        """How a rationale names instruction i: its label, else its first bound result."""
        inst = self.p.instructions[i]
        if inst.label:
            return [inst.label]
        return [o for o in inst.outputs if o != "_"][:1]

    def operand_link(self, inst: BoundInst) -> list[str]:
        """An instruction without results is linked through the first result it acts on."""
        if inst.label:
            return [inst.label]
        for param in inst.entry.params:
            for r in _refs(inst.args.get(param.name)):
                if r in self.p.definitions:
                    return [r]
        return []

    def links(self, indices) -> list[str]:
        out: list[str] = []
        for i in sorted(set(indices)):
            got = self.link(i) or self.operand_link(self.p.instructions[i])
            for name in got:
                if name not in out:
                    out.append(name)
        return out

    # -- entries --------------------------------------------------------------------

    def fact(self, text, about=(), **data) -> Entry:
        e = Entry("fact", text, {"about": list(about)} if about else {}, {k: _lit(v) for k, v in data.items()})
        self.facts.append(e)
        return e

    def rationale(self, text, because, indices, effects) -> None:
        self.claimed |= set(indices)
        produces = self.links(indices)
        links = {}
        if because:
            links["because"] = [b for b in because if b is not None]
        if produces:
            links["produces"] = produces
        r = Entry("rationale", text, links)
        self.groups.append((r, [Entry("effect", t, {"of": [r]}, {k: _lit(v) for k, v in d.items()}) for t, d in effects]))

    # -- the whole graph ----------------------------------------------------------

    def run(self) -> list[Entry]:
        self.find_caches()
        self.workload_facts()
        self.target_fact()
        self.launch_facts()
        self.tiling()
        self.binding()
        self.caches()
        self.fusion()
        self.reductions()
        self.loop_annotations()
        self.layout()
        out = list(self.facts)
        for r, effects in self.groups:
            out.append(r)
            out.extend(effects)
        return out

    def workload_facts(self):
        wl = self.wl
        if wl is None:
            return
        about_block: dict[str, list[str]] = {}
        for i, inst in enumerate(self.p.instructions):
            if inst.entry.name == "get_sblock":
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
            self.workload = self.fact(text, **data)
        else:
            self.workload = None
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
            self.block_fact[b.name] = self.fact(text, about_block.get(b.name, []), **data)

    def target_fact(self):
        t = self.tgt
        data = {"kind": t.kind}
        text = f"target {t.text} ({t.kind})"
        if t.gpu:
            for key, value, words in (("max_threads", t.max_threads_per_block, "threads per block"),
                                      ("max_shared", t.max_shared_memory_per_block, "bytes of shared memory per block"),
                                      ("warp", t.warp_size, "threads per warp")):
                if value:
                    data[key] = value
                    text += f"; {value} {words}"
        elif t.cores:
            data["cores"] = t.cores
            text += f"; {t.cores} cores"
        self.target = self.fact(text, **data)

    def launch_facts(self):
        self.kernel_facts = []
        if not self.si:
            return
        for k, kernel in enumerate(self.si.kernels):
            blocks, threads, vthreads = kernel.product("blockIdx"), kernel.product("threadIdx"), kernel.product("vthread")
            text = f"kernel {k}: {blocks} thread blocks of {threads} threads"
            if vthreads > 1:
                text += f", {vthreads} virtual threads each"
            text += " (" + ", ".join(f"{a}={e}" for a, e in kernel.axes.items()) + ")"
            self.kernel_facts.append((kernel, self.fact(text, kernel=k, blocks=blocks, threads=threads,
                                                        vthreads=vthreads, axes=dict(kernel.axes))))

    # -- multi-level tiling ----------------------------------------------------------

    def tiling(self):
        by_block: dict[str, list[int]] = {}
        tiles: dict[str, dict[str, list[int]]] = {}
        kinds: dict[str, dict[str, str]] = {}
        sampled: dict[str, int] = {}  # value variable -> sampling instruction
        structure: dict[str, str] = {}
        for i, inst in enumerate(self.p.instructions):
            n = inst.entry.name
            if n in ("sample_perfect_tile", "sample_partitioned_tile"):
                loop = _refs(inst.args.get("loop"))
                if not loop:
                    continue
                blk = self.origin.get(loop[0])
                state = self.loop(loop[0], final=False)
                axis = state.axes[0] if state and len(state.axes) == 1 else (state.name if state else loop[0])
                decision = inst.args.get("decision")
                if blk is None or not isinstance(decision, list):
                    continue
                by_block.setdefault(blk, []).append(i)
                tiles.setdefault(blk, {})[axis] = list(decision)
                kinds.setdefault(blk, {})[axis] = (state.axis_kinds[0] if state and state.axis_kinds else "spatial")
                for o in inst.outputs:
                    sampled[o] = i
            elif n == "split":
                factors = _refs(inst.args.get("factors"))
                # a split by sampled factors, or by constants, of a loop of a tiled block
                if all(f in sampled for f in factors):
                    blk = self.origin.get(_refs(inst.args.get("loop"))[0]) if _refs(inst.args.get("loop")) else None
                    if blk in by_block:
                        by_block[blk].append(i)
            elif n == "reorder":
                loops = _refs(inst.args.get("loops"))
                blks = {self.origin.get(x) for x in loops}
                if len(blks) == 1 and next(iter(blks)) in by_block:
                    by_block[next(iter(blks))].append(i)
            elif n == "annotate" and inst.args.get("key") == "meta_schedule.tiling_structure":
                blk = self.block_name(inst.args.get("target"))
                if blk and isinstance(inst.args.get("value"), str):
                    structure[blk] = inst.args["value"]
                    by_block.setdefault(blk, []).append(i)
        for blk, indices in by_block.items():
            if blk not in tiles:
                continue
            info = self.wl.blocks.get(blk) if self.wl else None
            tile = {a: math.prod(f[1:]) for a, f in tiles[blk].items()}
            outer = math.prod(f[0] for f in tiles[blk].values())
            spatial_tile = {a: t for a, t in tile.items() if kinds[blk].get(a) == "spatial"}
            outputs = math.prod(spatial_tile.values()) if spatial_tile else 1
            dtype = info.dtype if info else "float32"
            text = (f"block {blk} is tiled " + ", ".join(f"{a} as {f}" for a, f in tiles[blk].items())
                    + f"; one outer tile covers {dims(spatial_tile.values()) or 1} outputs "
                    f"({outputs * dtype_bytes(dtype)} bytes), {outer} outer tiles")
            data = {"block": blk, "tiles": tiles[blk], "tile": spatial_tile, "tile_bytes": outputs * dtype_bytes(dtype),
                    "outer_tiles": outer}
            if blk in structure:
                data["structure"] = structure[blk]
                text += f"; structure {structure[blk]}"
            f = self.fact(text, [self.link(i)[0] for i in indices if self.p.instructions[i].entry.name.startswith("sample")
                                 and self.link(i)], **data)
            reuse = {}
            if info:
                axis_tile = {a.name: tile.get(a.name, a.extent) for a in info.axes}
                for acc in info.reads:
                    r = math.prod(t for a, t in axis_tile.items() if a not in acc.axes)
                    if r > 1:
                        reuse.setdefault(acc.buffer, r)
            self.tile[blk] = {"fact": f, "reuse": reuse, "tiles": tiles[blk], "kinds": kinds[blk], "tile": tile}
            levels = max(len(x) for x in tiles[blk].values())
            why = (f"multi-level tiling of block {blk}: {levels} levels per axis so that outer tiles spread over "
                   + ("thread blocks and threads" if self.tgt.gpu else "cores") + " and inner tiles stay in fast memory")
            effects = []
            if reuse:
                effects.append((f"within one outer tile of {blk} each element of "
                                + ", ".join(f"{b} serves {r} iterations" for b, r in reuse.items())
                                + " instead of being fetched again", {"reuse": reuse}))
            effects.append((f"{outer} independent outer tiles of {outputs} outputs each", {"outer_tiles": outer, "tile_outputs": outputs}))
            self.rationale(why, [self.block_fact.get(blk), f], indices, effects)

    # -- GPU thread binding -----------------------------------------------------------

    def binding(self):
        groups: dict[str, list[int]] = {}
        bound: dict[str, list[tuple[str, str]]] = {}
        defined_by = {o: i for i, inst in enumerate(self.p.instructions) for o in inst.outputs}
        for i, inst in enumerate(self.p.instructions):
            if inst.entry.name != "bind" or i in self.claimed:
                continue
            loop = _refs(inst.args.get("loop"))
            if not loop:
                continue
            blk = self.origin.get(loop[0]) or "?"
            if self._is_cache_block(blk):
                continue  # cooperative fetch: explained with its cache stage
            groups.setdefault(blk, []).append(i)
            maker = defined_by.get(loop[0])
            if maker is not None and self.p.instructions[maker].entry.name == "fuse":
                groups[blk].append(maker)
            bound.setdefault(blk, []).append((loop[0], inst.args.get("thread_axis", "")))
        for i, inst in enumerate(self.p.instructions):
            if inst.entry.name == "annotate" and str(inst.args.get("key", "")).startswith("meta_schedule.thread_extent"):
                blk = self.block_name(inst.args.get("target"))
                if blk in groups:
                    groups[blk].append(i)
        for blk, indices in groups.items():
            axes = bound[blk]
            extents = {}
            for var, tag in axes:
                st = self.loop(var)
                if st is not None and st.extent is not None:
                    extents[tag] = st.extent
            kfacts = [f for k, f in self.kernel_facts if all(k.axes.get(t) == e for t, e in extents.items())] or \
                [f for _, f in self.kernel_facts]
            why = (f"bind the outer loops of block {blk} to the GPU: "
                   + ", ".join(f"{var} to {tag}" for var, tag in axes))
            effects = []
            threads = math.prod(e for t, e in extents.items() if t.startswith("threadIdx"))
            blocks = math.prod(e for t, e in extents.items() if t.startswith("blockIdx"))
            if any(t.startswith("threadIdx") for t in extents):
                warp = self.tgt.warp_size or 32
                warps = -(-threads // warp)
                data = {"threads": threads, "warps": warps, "lane_use": threads / (warps * warp)}
                text = f"{threads} threads per block = {warps} warp(s), {fmt(100 * threads / (warps * warp))}% of their lanes busy"
                if self.tgt.max_threads_per_block:
                    data["thread_fraction"] = threads / self.tgt.max_threads_per_block
                    text += f"; {fmt(100 * threads / self.tgt.max_threads_per_block)}% of the {self.tgt.max_threads_per_block}-thread limit"
                effects.append((text, data))
            if any(t.startswith("blockIdx") for t in extents):
                effects.append((f"{blocks} thread blocks run independently", {"blocks": blocks}))
            self.rationale(why, [self.block_fact.get(blk), self.target] + kfacts, indices, effects)

    # -- caches ---------------------------------------------------------------------

    def _is_cache_block(self, name: str) -> bool:
        return name in set(self._cache_names.values())

    def find_caches(self):
        self._cache_names: dict[str, str] = {}  # cache stage variable -> its block's name
        self._stages: list[int] = []
        for i, inst in enumerate(self.p.instructions):
            if inst.entry.name in _CACHES:
                for o in inst.outputs:
                    if o in self.block_of:
                        self._cache_names[o] = self.block_of[o]
                self._stages.append(i)

    def caches(self):
        stages = self._stages
        names = set(self._cache_names.values())
        members: dict[str, list[int]] = {n: [] for n in names}
        for i, inst in enumerate(self.p.instructions):
            if i in self.claimed or inst.entry.name not in _STAGE_MEMBERS:
                continue
            first = next((r for param in inst.entry.params for r in _refs(inst.args.get(param.name))), None)
            owner = (self.block_of.get(first) or self.origin.get(first)) if first else None
            if owner not in names:
                continue
            members[owner].append(i)
            if inst.entry.name == "annotate":
                members[owner] += [self.p.definitions[r][2] for r in _refs(inst.args.get("value")) if r in self.p.definitions]
        allocs = {a.name: a for a in (self.si.allocations if self.si else [])}
        shared_total = sum(a.bytes for a in allocs.values() if a.scope.startswith("shared"))
        for i in stages:
            inst = self.p.instructions[i]
            out = next((o for o in inst.outputs if o in self._cache_names), None)
            name = self._cache_names.get(out) if out else None
            scope = str(inst.args.get("storage_scope", ""))
            consumer = self.block_name(inst.args.get("block"))
            info = self.wl.blocks.get(consumer) if (self.wl and consumer) else None
            buffer = None
            if info is not None:
                side = info.reads if inst.entry.name in ("cache_read", "read_at", "cache_inplace") else info.writes
                idx = inst.args.get("read_buffer_index", inst.args.get("write_buffer_index", 0))
                if isinstance(idx, int) and 0 <= idx < len(side):
                    buffer = side[idx].buffer
            because = [self.block_fact.get(consumer) if consumer else None]
            alloc = allocs.get(name) if name else None
            if alloc is not None:
                text = f"{alloc.name} is a {alloc.scope} buffer of {dims(alloc.shape)} {alloc.dtype}: {alloc.bytes} bytes"
                data = {"buffer": alloc.name, "scope": alloc.scope, "shape": list(alloc.shape), "bytes": alloc.bytes}
                if alloc.scope.startswith("shared") and self.tgt.max_shared_memory_per_block:
                    text += (f"; all shared buffers of the kernel take {shared_total} of "
                             f"{self.tgt.max_shared_memory_per_block} bytes per block")
                    data["shared_total"] = shared_total
                because.append(self.fact(text, [out], **data))
            tile = self.tile.get(consumer or "", {})
            if tile:
                because.append(tile["fact"])
            idx = [i] + members.get(name, [])
            effects = []
            what = buffer or (name or "a buffer")
            if inst.entry.name in ("cache_read", "read_at") and scope.startswith("shared"):
                why = (f"stage {what} in shared memory for block {consumer}: the threads of a block fetch the tile "
                       "cooperatively once and all of them read it from there")
                reuse = tile.get("reuse", {}).get(buffer) if tile else None
                if reuse:
                    effects.append((f"each element of {what} fetched into shared memory is read {reuse} times from it: "
                                    f"{reuse}x fewer global loads of {what}", {"reuse": reuse, "fewer_global_loads": reuse}))
            elif inst.entry.name in ("cache_write", "write_at") and scope.startswith("local"):
                red = math.prod(a.extent for a in info.axes if a.kind == "reduction") if info else 1
                why = f"accumulate {what} of block {consumer} in registers and write each output back once"
                if red > 1:
                    effects.append((f"one global store per output of {what} instead of one per each of the {red} "
                                    "reduction steps", {"fewer_global_stores": red}))
            elif inst.entry.name in ("cache_write", "write_at"):
                why = f"compute block {consumer} into a {scope} staging buffer and copy {what} out tile by tile"
                if tile:
                    effects.append((f"the copy-out of {what} runs over whole tiles of {tile['fact'].data.get('tile_bytes')} bytes",
                                    {"tile_bytes": tile["fact"].data.get("tile_bytes")}))
            else:
                why = f"keep {what} of block {consumer} in a {scope or 'separate'} buffer ({inst.entry.name})"
            lanes = self._fetch_lanes(members.get(name, []))
            if lanes:
                effects.append((f"the copy of {what} moves {lanes} elements per vector access", {"lanes": lanes}))
            if alloc is not None and alloc.scope != "global" and buffer and self.wl:
                whole = next((b for b in self.wl.params if b.name == buffer), None) or self.wl.intermediates.get(buffer)
                if whole is not None and whole.bytes > alloc.bytes:
                    effects.append((f"the {alloc.scope} copy holds {alloc.bytes} of {whole.bytes} bytes of {buffer}: "
                                    f"{fmt(whole.bytes / alloc.bytes)}x smaller", {"smaller_by": whole.bytes / alloc.bytes}))
            self.rationale(why, because, idx, effects)

    def _fetch_lanes(self, indices) -> Optional[int]:
        for i in indices:
            inst = self.p.instructions[i]
            if inst.entry.name == "vectorize":
                st = self.loop(_refs(inst.args.get("loop"))[0])
                if st is not None and st.extent:
                    return st.extent
        return None

    # -- fusion -----------------------------------------------------------------------

    def fusion(self):
        for i, inst in enumerate(self.p.instructions):
            n = inst.entry.name
            if i in self.claimed or n not in ("compute_inline", "reverse_compute_inline", "compute_at",
                                               "reverse_compute_at", "fuse_reduction_epilogue"):
                continue
            ref = inst.args.get("block") or inst.args.get("epilogue_block")
            blk = self.block_name(ref)
            info = self.wl.blocks.get(blk) if (self.wl and blk) else None
            because = [self.block_fact.get(blk)] if blk else []
            idx = [i]
            loop = _refs(inst.args.get("loop"))
            if loop and loop[0] in self.p.definitions:
                maker = self.p.definitions[loop[0]][2]
                if 0 <= maker < len(self.p.instructions) and self.p.instructions[maker].entry.name == "sample_compute_location":
                    idx.append(maker)
            inter = None
            if info is not None and self.wl is not None:
                side = info.writes if n in ("compute_inline", "compute_at") else info.reads
                inter = next((self.wl.intermediates[a.buffer] for a in side if a.buffer in self.wl.intermediates), None)
            effects = []
            if n in ("compute_inline", "reverse_compute_inline"):
                where = "its consumers" if n == "compute_inline" else "its producer"
                why = f"inline block {blk or '?'} into {where}: an elementwise step needs no loop nest or buffer of its own"
                if inter is not None:
                    because.append(self.fact(f"{inter.name} is an intermediate buffer of {dims(inter.shape)} {inter.dtype}: "
                                             f"{inter.bytes} bytes", buffer=inter.name, bytes=inter.bytes,
                                             shape=list(inter.shape)))
                    effects.append((f"{inter.name} is never stored: {2 * inter.bytes} bytes of stores and loads saved",
                                    {"bytes_saved": 2 * inter.bytes}))
            elif n == "fuse_reduction_epilogue":
                why = f"fold the epilogue block {blk or '?'} into its reduction"
            else:
                st = self.loop(loop[0], final=False) if loop else None
                at = f"loop {st.name} (extent {st.extent})" if st else "the chosen loop"
                if n == "compute_at":
                    why = f"compute producer block {blk or '?'} under {at}: each tile is made just before its consumer reads it"
                else:
                    why = f"compute consumer block {blk or '?'} under {at}: each tile is used right after its producer makes it"
                decision = None
                if len(idx) > 1:
                    decision = self.p.instructions[idx[1]].args.get("decision")
                if decision is not None:
                    because.append(self.fact(f"the compute location of {blk} was sampled: decision {decision}",
                                             [self.link(idx[1])[0]] if self.link(idx[1]) else [], decision=decision))
                allocs = {a.name: a for a in (self.si.allocations if self.si else [])}
                if inter is not None and inter.name in allocs and allocs[inter.name].bytes < inter.bytes:
                    small = allocs[inter.name]
                    effects.append((f"{inter.name} shrinks from {inter.bytes} to {small.bytes} bytes and stays hot in cache",
                                    {"bytes": small.bytes, "bytes_before": inter.bytes}))
            self.rationale(why, because, idx, effects)

    # -- reductions -------------------------------------------------------------------

    def reductions(self):
        for i, inst in enumerate(self.p.instructions):
            n = inst.entry.name
            if i in self.claimed:
                continue
            if n == "rfactor":
                loop = _refs(inst.args.get("loop"))
                st = self.loop(loop[0], final=False) if loop else None
                blk = self.origin.get(loop[0]) if loop else None
                ext = st.extent if st else None
                because = [self.block_fact.get(blk)] if blk else []
                if ext:
                    because.append(self.fact(f"the reduction loop {st.name} of block {blk} has extent {ext}",
                                             [loop[0]], loop=st.name, extent=ext))
                why = f"rfactor the reduction of block {blk or '?'}: partial sums along {st.name if st else 'the loop'} become independent"
                effects = [(f"{ext} partial results can be computed in parallel before a final reduction",
                            {"partials": ext})] if ext else []
                self.rationale(why, because, [i], effects)
            elif n == "decompose_reduction":
                blk = self.block_name(inst.args.get("block"))
                loop = _refs(inst.args.get("loop"))
                st = self.loop(loop[0], final=False) if loop else None
                why = (f"split the initialisation of block {blk or '?'} from its update, placed before loop "
                       f"{st.name if st else '?'}")
                info = self.wl.blocks.get(blk) if (self.wl and blk) else None
                red = math.prod(a.extent for a in info.axes if a.kind == "reduction") if info else None
                effects = [(f"the accumulator is set once per output, not tested in each of the {red} reduction steps",
                            {"branches_removed": red})] if red and red > 1 else []
                self.rationale(why, [self.block_fact.get(blk)] if blk else [], [i], effects)

    # -- loop annotations -----------------------------------------------------------

    def loop_annotations(self):
        unroll, vec, par, pipe = [], [], [], []
        for i, inst in enumerate(self.p.instructions):
            if i in self.claimed:
                continue
            n, key = inst.entry.name, inst.args.get("key")
            if n in ("annotate", "unannotate") and key in _UNROLL_KEYS or n == "unroll":
                unroll.append(i)
            elif n in ("annotate", "unannotate") and key == "meta_schedule.vectorize" or n == "vectorize":
                vec.append(i)
            elif n in ("annotate", "unannotate") and key == "meta_schedule.parallel" or n == "parallel":
                par.append(i)
            elif n in ("annotate", "unannotate") and key in _PIPELINE_KEYS:
                pipe.append(i)
        if unroll:
            self._unroll(unroll)
        if vec:
            self._vectorize(vec)
        if par:
            self._parallel(par)
        if pipe:
            self.rationale("software-pipeline the loop: loads of the next stage overlap the computation of this one",
                           [], pipe, [])

    def _annotated_value(self, inst: BoundInst):
        v = inst.args.get("value")
        if isinstance(v, Ref) and v.name in self.p.definitions:
            maker = self.p.instructions[self.p.definitions[v.name][2]]
            if maker.entry.name == "sample_categorical":
                cands, d = maker.args.get("candidates", []), maker.args.get("decision")
                if isinstance(d, int) and 0 <= d < len(cands):
                    return cands[d], self.p.definitions[v.name][2]
            return None, self.p.definitions[v.name][2]
        return (v if isinstance(v, int) and not isinstance(v, bool) else None), None

    def _unroll(self, indices):
        steps, explicit, idx, loops = [], None, list(indices), []
        for i in indices:
            inst = self.p.instructions[i]
            key = inst.args.get("key")
            if inst.entry.name == "unroll":
                loops += _refs(inst.args.get("loop"))
                continue
            if inst.entry.name != "annotate":
                continue
            value, maker = self._annotated_value(inst)
            if maker is not None:
                idx.append(maker)
            if key in ("meta_schedule.unroll_explicit", "meta_schedule.unroll_implicit", "pragma_auto_unroll_max_step"):
                if value is not None and value not in steps:
                    steps.append(value)
                if key != "pragma_auto_unroll_max_step":
                    explicit = key.endswith("explicit")
            elif key == "pragma_unroll_explicit" and value is not None:
                explicit = bool(value)
        because = []
        if steps:
            because.append(self.fact(f"auto-unroll limit {max(steps)} steps"
                                     + ("" if explicit is None else (" (explicit)" if explicit else " (implicit)")),
                                     max_step=max(steps)))
        for var in loops:
            st = self.loop(var)
            if st is not None:
                because.append(self.fact(f"loop {st.name} is unrolled ({st.extent} iterations)", [var],
                                         loop=st.name, extent=st.extent, kind=st.kind))
        why = "unroll inner loops: straight-line code without loop counters, and independent steps the compiler can interleave"
        effects = []
        if steps and max(steps) > 0:
            effects.append((f"loops with at most {max(steps)} iterations in total are unrolled", {"max_step": max(steps)}))
        elif steps:
            effects.append(("the limit 0 leaves loops rolled", {"max_step": 0}))
        self.rationale(why, because, idx, effects)

    def _loops_of(self, indices, name):
        out = []
        for i in indices:
            inst = self.p.instructions[i]
            if inst.entry.name == name:
                for var in _refs(inst.args.get("loop")):
                    st = self.loop(var)
                    if st is not None:
                        out.append((var, st))
        return out

    def _vectorize(self, indices):
        because, effects, idx = [], [], list(indices)
        limits = []
        for i in indices:
            inst = self.p.instructions[i]
            if inst.entry.name == "annotate":
                value, maker = self._annotated_value(inst)
                if maker is not None:
                    idx.append(maker)
                if value is not None:
                    limits.append(value)
        if limits:
            because.append(self.fact(f"vectorize limit: innermost loops of up to {max(limits)} iterations", max_extent=max(limits)))
        lanes = []
        for var, st in self._loops_of(indices, "vectorize"):
            blk = self.origin.get(var)
            info = self.wl.blocks.get(blk) if (self.wl and blk) else None
            width = st.extent * dtype_bytes(info.dtype) if (info and st.extent) else None
            text = f"loop {st.name} is vectorized: {st.extent} lanes"
            data = {"loop": st.name, "extent": st.extent, "kind": st.kind}
            if width:
                text += f" of {info.dtype} = {width} bytes"
                data["bytes"] = width
            because.append(self.fact(text, [var], **data))
            if st.extent:
                lanes.append(st.extent)
        if lanes:
            effects.append((f"one vector instruction handles up to {max(lanes)} elements", {"lanes": max(lanes)}))
        self.rationale("vectorize innermost contiguous loops: one SIMD instruction per group of elements",
                       because, idx, effects)

    def _parallel(self, indices):
        because, effects, idx = [], [], list(indices)
        for i in indices:
            inst = self.p.instructions[i]
            if inst.entry.name == "annotate":
                value, maker = self._annotated_value(inst)
                if maker is not None:
                    idx.append(maker)
                if value is not None:
                    because.append(self.fact(f"parallel limit: outer loops of up to {value} iterations", max_extent=value))
        cores = self.tgt.cores
        if cores:
            because.append(self.target)
        for var, st in self._loops_of(indices, "parallel"):
            because.append(self.fact(f"loop {st.name} runs in parallel: {st.extent} iterations", [var],
                                     loop=st.name, extent=st.extent, kind=st.kind))
            if cores and st.extent:
                per = -(-st.extent // cores)
                effects.append((f"{st.extent} iterations over {cores} cores: {per} per core, "
                                f"{fmt(100 * st.extent / (per * cores))}% balanced",
                                {"per_core": per, "balance": st.extent / (per * cores)}))
        self.rationale("parallelize outer loops across the CPU cores", because, idx, effects)

    # -- layout, tensorization --------------------------------------------------------

    def layout(self):
        lay, tens = [], []
        for i, inst in enumerate(self.p.instructions):
            if i in self.claimed:
                continue
            if inst.entry.name in _LAYOUT:
                lay.append(i)
            elif inst.entry.name in ("tensorize", "blockize"):
                tens.append(i)
        if lay:
            kinds = sorted({self.p.instructions[i].entry.name for i in lay})
            self.rationale("change data layout (" + ", ".join(kinds) + ") so that accesses follow the loop order",
                           [], lay, [])
        if tens:
            intrins = sorted({str(self.p.instructions[i].args.get("tensor_intrin")) for i in tens
                              if self.p.instructions[i].entry.name == "tensorize"})
            because = [self.fact(f"tensor intrinsic {name}", intrinsic=name) for name in intrins]
            self.rationale("map an inner tile onto a hardware tensor intrinsic", because, tens, [])


def _lit(v):
    """Data values as literals the checker accepts: numbers rounded, tuples as lists, dict keys as text."""
    if isinstance(v, dict):
        return {str(k): _lit(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_lit(x) for x in v]
    return number(v)


def build(program: Program, wl, si, tgt) -> list[Entry]:
    return Explainer(program, wl, si, tgt).run()
