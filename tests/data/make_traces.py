#!/usr/bin/env python
"""Generate the TVM schedule-trace test fixtures under tests/data/.

Run from the repository root:

    .venv/bin/python tests/data/make_traces.py            # everything
    .venv/bin/python tests/data/make_traces.py --skip-tuning

Writes
  tests/data/workloads/<name>.tvmscript   printed IRModule (one PrimFunc "main"), after one
                                          print/parse cycle
  tests/data/traces/design_spaces.jsonl   MetaSchedule design spaces, 2 targets
  tests/data/traces/sampled.jsonl         re-sampled + post-processed candidates
  tests/data/traces/handwritten.jsonl     hand-written schedules covering all 52 instruction kinds
  tests/data/tuning/<workload>/           raw JSONDatabase files of a short CPU tuning run

Everything is seeded; the only non-deterministic output is the measured run times in
tests/data/tuning (and the database's order of records of equal cost).
Never uses Trace.as_python() and never execs text: traces go through
Trace.as_json(remove_postproc=False) -> plain JSON -> Trace.apply_json_to_schedule.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict

import tvm
import tvm_ffi
from tvm import s_tir, te, tirx
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.testing import te_workload
from tvm.script import tirx as T
from tvm.target import Target

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD_DIR = os.path.join(HERE, "workloads")
TRACE_DIR = os.path.join(HERE, "traces")
TUNING_DIR = os.path.join(HERE, "tuning")

TARGETS = ["nvidia/nvidia-h100", {"kind": "llvm", "num-cores": 2}]
SEED = 20260101
SAMPLES_PER_SPACE = 2  # successful sampled candidates wanted per design space
MAX_SAMPLE_ATTEMPTS = 6  # seeds tried per design space

# The 52 instruction kinds of TVM 0.27 (TVM-0.27-INSTRUCTIONS.md, section 3).
ALL_KINDS = [
    "GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers",
    "GetOutputBlocks", "SampleCategorical", "SamplePerfectTile", "SamplePartitionedTile",
    "SampleComputeLocation", "Split", "LoopPartition", "Merge", "Fuse", "Reorder",
    "ReorderBlockIterVar", "AddUnitLoop", "Parallel", "Vectorize", "Unroll", "Bind",
    "CacheRead", "CacheWrite", "CacheInplace", "CacheIndex", "ReIndex", "ReindexCacheRead",
    "ReindexCacheWrite", "ReadAt", "WriteAt", "ComputeAt", "ReverseComputeAt",
    "ComputeInline", "ReverseComputeInline", "FuseReductionEpilogue", "DecomposeReduction",
    "RFactor", "StorageAlign", "SetScope", "UnsafeSetDType", "Blockize", "Tensorize",
    "Annotate", "Unannotate", "TransformLayout", "TransformBlockLayout", "DecomposePadding",
    "PadEinsum", "RollingBuffer", "UnsafeHideBufferAccess", "AnnotateBufferAccess",
    "EnterPostproc",
]  # fmt: skip
assert len(ALL_KINDS) == 52 and len(set(ALL_KINDS)) == 52


def log(*args):
    print(*args, flush=True)


# ---------------------------------------------------------------------------------------------
# JSON conversion and replay check
# ---------------------------------------------------------------------------------------------


def to_plain(obj):
    """Trace.as_json() output -> plain Python (what C++ JSONDumps would write)."""
    if obj is None:
        return None
    if isinstance(obj, tirx.IntImm):
        dtype = str(getattr(obj, "ty", None) or getattr(obj, "dtype"))
        return bool(obj.value) if dtype == "bool" else int(obj.value)
    if isinstance(obj, tirx.FloatImm):
        return float(obj.value)
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, (list, tuple, tvm_ffi.Array)):
        return [to_plain(x) for x in obj]
    if isinstance(obj, (dict, tvm_ffi.Map)):
        return {str(to_plain(k)): to_plain(v) for k, v in obj.items()}
    raise TypeError(f"cannot convert {type(obj)} to JSON: {obj!r}")


def trace_json(sch: s_tir.Schedule):
    return to_plain(sch.trace.as_json(remove_postproc=False))


def replay_ok(mod: tvm.IRModule, trace, expected_mod: tvm.IRModule) -> str | None:
    """None if json.dumps/loads + apply_json_to_schedule reproduces expected_mod."""
    try:
        obj = json.loads(json.dumps(trace, ensure_ascii=False))
        sch = s_tir.Schedule(mod)
        s_tir.Trace.apply_json_to_schedule(obj, sch)
        tvm.ir.assert_structural_equal(sch.mod, expected_mod)
    except Exception as err:  # pylint: disable=broad-except
        return f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:300]}"
    return None


def kinds_of(trace) -> list[str]:
    return sorted({inst[0] for inst in trace[0]})


# ---------------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------------


def _te(*tensors):
    return te.create_prim_func(list(tensors))


def ew_add_relu(n=128, m=64):
    a = te.placeholder((n, m), name="A")
    b = te.placeholder((n, m), name="B")
    c = te.compute((n, m), lambda i, j: a[i, j] + b[i, j], name="add")
    d = te.compute((n, m), lambda i, j: te.max(c[i, j], tirx.const(0, "float32")), name="relu")
    return a, b, d


def row_sum(n=64, m=256):
    a = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    b = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="row_sum")
    return a, b


@T.prim_func(s_tir=True)
def transpose_64x32(A: T.Buffer((64, 32), "float32"), B: T.Buffer((32, 64), "float32")):
    for i, j in T.grid(32, 64):
        with T.sblock("transpose"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vj, vi]


@T.prim_func(s_tir=True)
def mean_var_64x128(A: T.Buffer((64, 128), "float32"), Out: T.Buffer((64, 128), "float32")):
    s = T.sblock_alloc_buffer((64,), "float32")
    for i, k in T.grid(64, 128):
        with T.sblock("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                s[vi] = T.float32(0)
            s[vi] = s[vi] + A[vi, vk]
    for i, j in T.grid(64, 128):
        with T.sblock("center"):
            vi, vj = T.axis.remap("SS", [i, j])
            Out[vi, vj] = A[vi, vj] - s[vi] * T.float32(0.0078125)


# --- extra workloads used by the hand-written schedules -------------------------------------


@T.prim_func(s_tir=True)
def pool_chain_1d(A: T.Buffer((4, 12), "int32"), C: T.Buffer((4, 8), "int32")):
    B = T.sblock_alloc_buffer((4, 10), "int32")
    for c, i, k in T.grid(4, 10, 3):
        with T.sblock("B"):
            cc, vi, vk = T.axis.remap("SSR", [c, i, k])
            with T.init():
                B[cc, vi] = 0
            B[cc, vi] = B[cc, vi] + A[cc, vi + vk]
    for c, i, k in T.grid(4, 8, 3):
        with T.sblock("C"):
            cc, vi, vk = T.axis.remap("SSR", [c, i, k])
            with T.init():
                C[cc, vi] = 0
            C[cc, vi] = C[cc, vi] + B[cc, vi + vk]


@T.prim_func(s_tir=True)
def matmul_bias_32(
    A: T.Buffer((32, 32), "float32"),
    B: T.Buffer((32, 32), "float32"),
    C: T.Buffer((32, 32), "float32"),
    D: T.Buffer((32, 32), "float32"),
):
    temp = T.sblock_alloc_buffer((32, 32), "float32")
    for i, j, k in T.grid(32, 32, 32):
        with T.sblock("multiply"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                temp[vi, vj] = T.float32(0)
            temp[vi, vj] = temp[vi, vj] + A[vi, vk] * B[vj, vk]
    for i, j in T.grid(32, 32):
        with T.sblock("add"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = temp[vi, vj] + C[vi, vj]


@T.prim_func(s_tir=True)
def dense_u8i8_16x32x16(
    X: T.Buffer((16, 16), "uint8"),
    W: T.Buffer((32, 16), "int8"),
    Y: T.Buffer((16, 32), "int32"),
):
    for i, j, k in T.grid(16, 32, 16):
        with T.sblock("compute"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = 0
            Y[vi, vj] = Y[vi, vj] + T.Cast("int32", X[vi, vk]) * T.Cast("int32", W[vj, vk])


@T.prim_func(s_tir=True)
def gather_elementwise(
    A: T.Buffer((64, 64), "float32"), Idx: T.Buffer((16,), "int32"), B: T.Buffer((16, 64), "float32")
):
    for i, j in T.grid(16, 64):
        with T.sblock("gather"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[Idx[vi], vj] + A[(vi * 3 + 1) // 2, vj // 4 * 4 + 1]


@T.prim_func(s_tir=True)
def inplace_add_64(A: T.Buffer((64,), "float32")):
    for i0 in range(1):
        with T.sblock("inplace"):
            T.reads(A[0:64])
            T.writes(A[0:64])
            for j in range(64):
                A[j] = A[j] + T.float32(1)


@T.prim_func(s_tir=True)
def matmul_irregular_31(
    A: T.Buffer((31, 17), "float32"), B: T.Buffer((17, 31), "float32"), C: T.Buffer((31, 31), "float32")
):
    for i, j, k in T.grid(31, 31, 17):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func(s_tir=True)
def two_consumers_32(
    A: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32"), D: T.Buffer((32, 32), "float32")
):
    B = T.sblock_alloc_buffer((32, 32), "float32")
    for i, j in T.grid(32, 32):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(32, 32):
        with T.sblock("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)
    for i, j in T.grid(32, 32):
        with T.sblock("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = B[vi, vj] * T.float32(3)


def workload_builders():
    """name -> zero-arg function returning a PrimFunc. Order is the output order."""
    cw = te_workload.create_te_workload
    w = {}
    # MetaSchedule's benchmark set (fixed shapes; the smallest configs were picked)
    for key, idx in [
        ("C1D", 0), ("C2D", 0), ("C2D", 1), ("C3D", 3), ("GMM", 0), ("GRP", 3), ("DIL", 3),
        ("DEP", 3), ("T2D", 0), ("CAP", 3), ("NRM", 0), ("SFM", 0), ("SFM", 1), ("CBR", 3),
        ("TBG", 0),
    ]:  # fmt: skip
        w[f"{key.lower()}_{idx}"] = (lambda k=key, i=idx: cw(k, i))
    # te_workload functions with small, chosen shapes
    w["matmul_64"] = lambda: _te(*te_workload.matmul(64, 64, 64))
    w["matmul_relu_64"] = lambda: _te(*te_workload.matmul_relu(64, 64, 64))
    w["bmm_4x32"] = lambda: _te(*te_workload.batch_matmul_nkkm(4, 32, 32, 32))
    w["conv2d_nchw_16"] = lambda: _te(*te_workload.conv2d_nchw(1, 16, 16, 16, 16, 3, 3, 1, 1))
    w["conv2d_nchw_bias_bn_relu_16"] = lambda: _te(
        *te_workload.conv2d_nchw_bias_bn_relu(1, 16, 16, 16, 16, 3, 3, 1, 1)
    )
    w["max_pool2d_16"] = lambda: _te(*te_workload.max_pool2d_nchw(1, 16, 16, 16, 1))
    w["softmax_64"] = lambda: _te(*te_workload.softmax_mn(64, 64))
    # hand-written elementwise / reduction / transpose
    w["ew_add_relu_128x64"] = lambda: _te(*ew_add_relu())
    w["row_sum_64x256"] = lambda: _te(*row_sum())
    w["transpose_64x32"] = lambda: transpose_64x32
    w["mean_center_64x128"] = lambda: mean_var_64x128
    # extras for the hand-written schedules
    w["pool_chain_1d"] = lambda: pool_chain_1d
    w["matmul_bias_32"] = lambda: matmul_bias_32
    w["dense_u8i8_16x32x16"] = lambda: dense_u8i8_16x32x16
    w["gather_64"] = lambda: gather_elementwise
    w["inplace_add_64"] = lambda: inplace_add_64
    w["matmul_31x31x17"] = lambda: matmul_irregular_31
    w["two_consumers_32"] = lambda: two_consumers_32
    return w


def build_workloads() -> dict[str, tvm.IRModule]:
    os.makedirs(WORKLOAD_DIR, exist_ok=True)
    for f in os.listdir(WORKLOAD_DIR):
        if f.endswith(".tvmscript"):
            os.remove(os.path.join(WORKLOAD_DIR, f))
    mods = {}
    for name, fn in workload_builders().items():
        func = fn().with_attr("global_symbol", "main")
        mod = tvm.IRModule({"main": func})
        text = mod.script()
        mod = tvm.script.parser.parse(text)  # one print/parse cycle: stable names
        text = mod.script()
        path = os.path.join(WORKLOAD_DIR, f"{name}.tvmscript")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        with open(path, encoding="utf-8") as f:
            back = tvm.script.parser.parse(f.read())
        assert isinstance(back, tvm.IRModule), name
        assert [gv.name_hint for gv in back.get_global_vars()] == ["main"], name
        tvm.ir.assert_structural_equal(back, mod)
        mods[name] = back
    log(f"[workloads] {len(mods)} written to {os.path.relpath(WORKLOAD_DIR)}")
    return mods


# ---------------------------------------------------------------------------------------------
# Design spaces and sampled candidates
# ---------------------------------------------------------------------------------------------


def make_context(mod, target, seed):
    return ms.TuneContext(
        mod=mod,
        target=Target(target),
        space_generator="post-order-apply",
        search_strategy="evolutionary",
        task_name="main",
        rand_state=seed,
        num_threads=1,
    )


def sample_candidate(mod, space: s_tir.Schedule, postprocs, seed: int):
    """What EvolutionarySearch's SampleInitPopulation / ThreadedTraceApply does:
    drop the design space's decisions, replay its instructions on a fresh schedule (which
    re-samples every decision), then enter_postproc() and run every postprocessor."""
    trace = s_tir.Trace(space.trace.insts, {})
    sch = s_tir.Schedule(mod, seed=seed, debug_mask="none", error_render_level="none")
    trace.apply_to_schedule(sch, remove_postproc=True)
    sch.enter_postproc()
    for proc in postprocs:
        if not proc.apply(sch):
            return None, type(proc).__name__
    return sch, None


def gen_spaces_and_samples(mods: dict[str, tvm.IRModule]):
    ds_lines, sp_lines = [], []
    stats = Counter()
    drops = []
    for t_idx, target in enumerate(TARGETS):
        tkey = target if isinstance(target, str) else target["kind"]
        for w_idx, (name, mod) in enumerate(mods.items()):
            t0 = time.time()
            seed = SEED + 1000 * t_idx + w_idx
            try:
                ctx = make_context(mod, target, seed)
                spaces = ctx.generate_design_space()
            except Exception as err:  # pylint: disable=broad-except
                drops.append((name, tkey, "design_space", "generate", repr(err)[:200]))
                continue
            postprocs = list(ctx.space_generator.postprocs)
            n_ds = n_sp = 0
            for s_idx, space in enumerate(spaces):
                tj = trace_json(space)
                err = replay_ok(mod, tj, space.mod)
                if err:
                    drops.append((name, tkey, "design_space", s_idx, err))
                    stats[(tkey, "design_space", "dropped")] += 1
                else:
                    ds_lines.append(
                        {"workload": name, "target": target, "source": "design_space", "trace": tj}
                    )
                    n_ds += 1
                seen = set()
                got = 0
                for attempt in range(MAX_SAMPLE_ATTEMPTS):
                    if got >= SAMPLES_PER_SPACE:
                        break
                    sseed = seed * 100 + s_idx * 10 + attempt
                    try:
                        sch, failed = sample_candidate(mod, space, postprocs, sseed)
                    except Exception as err:  # pylint: disable=broad-except
                        sch, failed = None, f"exception {type(err).__name__}"
                    if sch is None:
                        stats[(tkey, "sampled", f"postproc failed: {failed}")] += 1
                        continue
                    tj = trace_json(sch)
                    key = json.dumps(tj)
                    if key in seen:
                        stats[(tkey, "sampled", "duplicate")] += 1
                        continue
                    seen.add(key)
                    err = replay_ok(mod, tj, sch.mod)
                    if err:
                        drops.append((name, tkey, "sampled", s_idx, err))
                        stats[(tkey, "sampled", "dropped")] += 1
                        continue
                    sp_lines.append(
                        {"workload": name, "target": target, "source": "sampled", "trace": tj}
                    )
                    got += 1
                    n_sp += 1
            log(
                f"[spaces] {tkey:20s} {name:28s} spaces={len(spaces)} kept={n_ds} "
                f"sampled={n_sp} ({time.time() - t0:.1f}s)"
            )
    return ds_lines, sp_lines, stats, drops


# ---------------------------------------------------------------------------------------------
# Hand-written schedules
# ---------------------------------------------------------------------------------------------

CPU = TARGETS[1]
GPU = TARGETS[0]
ODD_STRING = "q\"uo'te \\ back\\slash\nnewline\ttab \u00e9 \u4e2d \U0001f600 \"\" None b0 {\"looks\": \"json\"}"


def hw_matmul_cpu(sch):
    """CPU tiling with every annotation value type."""
    root = sch.get_sblock("root")
    b = sch.get_sblock("C")
    i, j, k = sch.get_loops(b)
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    j0, j1 = sch.split(j, [None, 16])
    k0, k1 = sch.split(k, [8, None], preserve_unit_iters=False)
    sch.reorder(i0, j0, k0, i1, k1, j1)
    ij = sch.fuse(i0, j0)
    sch.parallel(ij)
    sch.unroll(k1)
    sch.vectorize(j1)
    cw = sch.cache_write(b, 0, "global")
    sch.reverse_compute_at(cw, ij, preserve_unit_loops=True)
    sch.decompose_reduction(b, k0)
    v = sch.sample_categorical([0, 16, 64, 512], [0.1, 0.2, 0.3, 0.4])
    sch.annotate(root, "meta_schedule.unroll_explicit", v)  # ExprRV value
    sch.annotate(b, "a_str", ODD_STRING)
    sch.annotate(b, "a_empty_str", "")
    sch.annotate(b, "a_int", 7)
    sch.annotate(b, "a_float", 0.2)
    sch.annotate(b, "a_bool", True)
    sch.annotate(ij, "a_false", False)
    # nested list: the Python type checker of Schedule.annotate rejects it, the FFI call does not
    s_tir.schedule._ffi_api.ScheduleAnnotate(sch, b, "a_nested_list", [1, [2, 3], [4.5, [True]]])
    sch.annotate(b, "a_list", [1, 2, 3])
    sch.annotate(ij, "a_dict", {"k1": 1, "k2": [2, 3], "k3": "str", "k4": 0.5})
    sch.unannotate(b, "a_int")
    sch.enter_postproc()
    sch.unannotate(ij, "a_false")
    return "split with sampled/None/int factors, fuse, parallel/unroll/vectorize, cache_write + reverse_compute_at, decompose_reduction, annotate with ExprRV/str (quotes, backslash, newline, non-ASCII)/empty str/int/float/bool/nested list/list/dict, unannotate before and after enter_postproc"


def hw_matmul_gpu(sch):
    """Classic shared-memory GPU tiling."""
    b = sch.get_sblock("C")
    i, j, k = sch.get_loops(b)
    bi, ti, ii = sch.split(i, [4, 8, None])
    bj, tj, jj = sch.split(j, [4, 8, None])
    ko, ki = sch.split(k, [None, 8])
    sch.reorder(bi, bj, ti, tj, ko, ki, ii, jj)
    bx = sch.fuse(bi, bj)
    tx = sch.fuse(ti, tj)
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    for idx in range(2):
        cr = sch.cache_read(b, idx, "shared")
        sch.compute_at(cr, ko, preserve_unit_loops=True)
        a0, a1 = sch.get_loops(cr)[-2:]
        f = sch.fuse(a0, a1)
        _, t = sch.split(f, [None, 64])
        sch.bind(t, "threadIdx.x")
        sch.storage_align(cr, 0, axis=0, factor=32, offset=1)
    cw = sch.cache_write(b, 0, "local")
    sch.reverse_compute_at(cw, tx, preserve_unit_loops=True)
    sch.unroll(ki)
    sch.decompose_reduction(b, ko)
    return "shared-memory tiling: split/reorder/fuse, bind blockIdx.x/threadIdx.x, cache_read shared + compute_at + storage_align, cache_write local + reverse_compute_at"


def hw_elementwise_gpu(sch):
    root = sch.get_sblock("root")
    outs = sch.get_output_blocks(root)
    children = sch.get_child_blocks(root)
    add = children[0]
    cons = sch.get_consumers(add)
    sch.get_producers(cons[0])
    sch.reverse_compute_inline(outs[0])
    sch.transform_block_layout(add, lambda i, j: (i * 64 + j,))
    (l,) = sch.get_loops(add)
    bx, tx = sch.split(l, [None, 256])
    sch.bind(bx, "blockIdx.x")
    sch.bind(tx, "threadIdx.x")
    return "get_output_blocks/get_child_blocks/get_consumers/get_producers, reverse_compute_inline, transform_block_layout (flatten 2-D -> 1-D), bind"


def hw_conv_chain_cpu(sch):
    for name in ["bias_add", "bn_mul"]:
        sch.compute_inline(sch.get_sblock(name))
    sch.reverse_compute_inline(sch.get_sblock("compute"))
    conv = sch.get_sblock("conv2d_nchw")
    n, f, y, x, rc, ry, rx = sch.get_loops(conv)
    yo, yi = sch.split(y, [None, 4])
    sch.reorder(n, f, yo, rc, ry, rx, yi, x)
    pad = sch.get_sblock("pad_temp")
    loc = sch.sample_compute_location(pad)
    sch.compute_at(pad, loc)
    ep = sch.get_sblock("bn_add")
    sch.reverse_compute_at(ep, yo)
    sch.parallel(sch.fuse(n, f))
    return "compute_inline x2, reverse_compute_inline, sample_compute_location + compute_at with the sampled LoopRV, reverse_compute_at"


def hw_decompose_padding(sch):
    pad = sch.get_sblock("pad_temp")
    conv = sch.get_sblock("conv2d_nchw")
    loops = sch.get_loops(pad)
    sch.decompose_padding(pad, loops[1])
    sch.reorder_block_iter_var(conv, [1, 0, 2, 3, 4, 5, 6])
    sch.add_unit_loop(conv)
    lp = sch.get_loops(conv)
    sch.add_unit_loop(lp[3])
    return "decompose_padding of the pad block, reorder_block_iter_var, add_unit_loop on a block and on a loop"


def hw_rfactor(sch):
    b = sch.get_sblock("row_sum")
    i, k = sch.get_loops(b)
    ko, ki = sch.split(k, [None, 16])
    rf = sch.rfactor(ki, 0)
    sch.parallel(sch.get_loops(rf)[0])
    sch.vectorize(sch.get_loops(rf)[-1])
    sch.get_child_blocks(sch.get_loops(b)[0])
    return "rfactor on the inner reduction loop"


def hw_pad_einsum(sch):
    b = sch.get_sblock("C")
    sch.pad_einsum(b, [32, 32, 32])
    return "pad_einsum of a 31x31x17 matmul to 32x32x32"


def hw_transform_layout(sch):
    b = sch.get_sblock("transpose")
    sch.transform_layout(b, ("write", 0), lambda i, j: [i, j // 5, j % 5], pad_value=0.0)
    sch.transform_layout(b, ("read", 0), lambda i, j: [i // 8, j, i % 8])
    return "transform_layout with an index map and a float pad_value (64 -> 13x5), and without pad_value"


def hw_transform_layout_im_pad(sch):
    b = sch.get_sblock("transpose")
    sch.transform_layout(
        b, ("write", 0), lambda i, j: [i // 3, j, i % 3],
        pad_value=lambda a, b, c: tirx.Cast("float32", a * 3 + c),
    )
    sch.transform_layout(b, "A", lambda i, j: [j, i], assume_injective_transform=True)
    return "transform_layout with an IndexMap (lambda) pad_value, and with assume_injective_transform=True"


def hw_two_consumers_gpu(sch):
    bb = sch.get_sblock("B")
    c = sch.get_sblock("C")
    d = sch.get_sblock("D")
    sch.annotate_buffer_access(bb, 0, "read", lambda vi, vj: ((vi, vi + 1), (vj, vj + 1)))
    sch.merge(sch.get_loops(c)[0], sch.get_loops(d)[0])
    sch.set_scope(bb, 0, "shared")
    sch.unsafe_set_dtype(bb, 0, "float16")
    return "annotate_buffer_access (read region), merge of two sibling loop nests, set_scope shared, unsafe_set_dtype float16"


def hw_blockize(sch):
    c = sch.get_sblock("C")
    ci, cj = sch.get_loops(c)
    cj0, cj1 = sch.split(cj, [None, 8])
    sch.blockize(cj1)
    return "blockize a loop"


def hw_blockize_blocks(sch):
    add = sch.get_sblock("add")
    relu = sch.get_sblock("relu")
    sch.blockize([add, relu], preserve_unit_iters=False)
    return "blockize a list of two sibling blocks (with their loop nests) into one outer block"


def hw_rolling_buffer(sch):
    _, i, _ = sch.get_loops(sch.get_sblock("C"))
    io, _ = sch.split(i, [2, 4])
    sch.compute_at(sch.get_sblock("B"), io)
    sch.rolling_buffer(sch.get_sblock("B"), 0)
    return "rolling_buffer on a 1-D pooling chain after compute_at"


def hw_cache_inplace(sch):
    b = sch.get_sblock("inplace")
    sch.cache_inplace(b, 0, "local")
    return "cache_inplace of a buffer read and written by the same block"


def hw_cache_index(sch):
    b = sch.get_sblock("gather")
    sch.cache_index(b, "global", 1)
    sch.unsafe_hide_buffer_access(b, "read", [0])
    return "cache_index of the index expressions (cse_thresh=1), then unsafe_hide_buffer_access of the block's first read"


def hw_reindex(sch):
    b = sch.get_sblock("Z")
    sch.reindex(b, ("write", 0))
    sch.reindex(b, ("read", 0))
    return "reindex of a write and a read buffer"


def hw_reindex_cache(sch):
    b = sch.get_sblock("C")
    sch.reindex_cache_read(b, 0, "shared", lambda i, j, k: (k, i))
    sch.reindex_cache_write(b, 0, "local", lambda i, j, k: (j // 16, i, j % 16))
    return "reindex_cache_read and reindex_cache_write with index maps"


def hw_read_write_at(sch):
    b = sch.get_sblock("C")
    i, j, k = sch.get_loops(b)
    io, ii = sch.split(i, [None, 16])
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 8])
    sch.reorder(io, jo, ko, ki, ii, ji)
    sch.read_at(ko, b, 0, "shared")
    sch.read_at(ko, b, 1, "shared")
    sch.write_at(jo, b, 0, "local")
    return "read_at x2 (shared) and write_at (local)"


def hw_partition(sch):
    b = sch.get_sblock("relu")
    i, j = sch.get_loops(b)
    f = sch.sample_partitioned_tile(j, n=3, partition_pos=1, innerpart_factor=4)
    sch.split(j, f)
    sch.loop_partition(i, [None, 16, 32])
    sch.get_sblock("relu_i1")
    _, aj = sch.get_loops(sch.get_sblock("add"))
    sch.loop_partition(aj, [8, None], preserve_unit_iters=False)
    return "sample_partitioned_tile + split with its factors, loop_partition with None/int factors, get_sblock of a partition block"


def hw_fuse_epilogue(sch):
    sch.fuse_reduction_epilogue(sch.get_sblock("multiply"), sch.get_sblock("add"))
    b = sch.get_sblock("multiply")
    i, j, k = sch.get_loops(b)
    sch.decompose_reduction(b, k)
    return "fuse_reduction_epilogue (bias add into the matmul init), decompose_reduction"


def hw_tensorize(sch):
    b = sch.get_sblock("compute")
    i, j, k = sch.get_loops(b)
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(i, jo, ko, ji, ki)
    sch.decompose_reduction(b, ko)
    sch.tensorize(ji, "dot_16x4_vnni")
    return "tensorize the 16x4 u8*i8->i32 dot product with the built-in x86 intrinsic dot_16x4_vnni (needs `import tvm.s_tir.tensor_intrin` before replay)"


def hw_tensorize_block(sch):
    b = sch.get_sblock("compute")
    i, j, k = sch.get_loops(b)
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(i, jo, ko, ji, ki)
    sch.decompose_reduction(b, ko)
    blk = sch.blockize(ji, preserve_unit_iters=False)
    sch.tensorize(blk, "dot_16x4_avx512", preserve_unit_iters=False)
    return "blockize, then tensorize the block with the built-in intrinsic dot_16x4_avx512 (needs `import tvm.s_tir.tensor_intrin` before replay)"


# (line name, workload, target, function, needs_tensor_intrin)
HANDWRITTEN = [
    ("matmul_cpu_annotations", "matmul_64", CPU, hw_matmul_cpu, False),
    ("matmul_gpu_shared", "matmul_64", GPU, hw_matmul_gpu, False),
    ("elementwise_gpu", "ew_add_relu_128x64", GPU, hw_elementwise_gpu, False),
    ("conv_chain_cpu", "conv2d_nchw_bias_bn_relu_16", CPU, hw_conv_chain_cpu, False),
    ("decompose_padding", "conv2d_nchw_16", CPU, hw_decompose_padding, False),
    ("rfactor", "row_sum_64x256", CPU, hw_rfactor, False),
    ("pad_einsum", "matmul_31x31x17", CPU, hw_pad_einsum, False),
    ("transform_layout", "transpose_64x32", CPU, hw_transform_layout, False),
    ("transform_layout_indexmap_pad", "transpose_64x32", CPU, hw_transform_layout_im_pad, False),
    ("two_consumers_gpu", "two_consumers_32", GPU, hw_two_consumers_gpu, False),
    ("blockize_loop", "two_consumers_32", CPU, hw_blockize, False),
    ("blockize_blocks", "ew_add_relu_128x64", CPU, hw_blockize_blocks, False),
    ("rolling_buffer", "pool_chain_1d", CPU, hw_rolling_buffer, False),
    ("cache_inplace", "inplace_add_64", CPU, hw_cache_inplace, False),
    ("cache_index", "gather_64", CPU, hw_cache_index, False),
    ("reindex", "bmm_4x32", CPU, hw_reindex, False),
    ("reindex_cache", "matmul_64", GPU, hw_reindex_cache, False),
    ("read_write_at", "matmul_64", GPU, hw_read_write_at, False),
    ("loop_partition", "ew_add_relu_128x64", CPU, hw_partition, False),
    ("fuse_reduction_epilogue", "matmul_bias_32", CPU, hw_fuse_epilogue, False),
    ("tensorize_loop", "dense_u8i8_16x32x16", CPU, hw_tensorize, True),
    ("tensorize_block", "dense_u8i8_16x32x16", CPU, hw_tensorize_block, True),
]


def gen_handwritten(mods):
    import tvm.s_tir.tensor_intrin  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import

    lines, failures = [], []
    for case, wname, target, fn, needs_intrin in HANDWRITTEN:
        mod = mods[wname]
        # cache_inplace fails the debug_mask="all" stage-pipeline verification (field notes)
        dmask = "none" if case == "cache_inplace" else "all"
        sch = s_tir.Schedule(mod, seed=SEED, debug_mask=dmask)
        try:
            note = fn(sch)
            tj = trace_json(sch)
        except Exception as err:  # pylint: disable=broad-except
            msg = f"{type(err).__name__}: {str(err).strip().splitlines()[-1][:400]}"
            failures.append((case, "schedule", msg))
            log(f"[handwritten] FAIL {case}: {msg}")
            continue
        err = replay_ok(mod, tj, sch.mod)
        if err:
            failures.append((case, "replay", err))
            log(f"[handwritten] DROP {case}: {err}")
            continue
        line = {
            "workload": wname,
            "target": target,
            "source": "handwritten",
            "trace": tj,
            "kinds": kinds_of(tj),
            "note": f"{case}: {note}",
        }
        if needs_intrin:
            line["needs_tensor_intrin"] = True
        lines.append(line)
        log(f"[handwritten] ok   {case}: {len(tj[0])} insts, kinds={line['kinds']}")
    return lines, failures


# ---------------------------------------------------------------------------------------------
# Short CPU tuning run
# ---------------------------------------------------------------------------------------------

TUNE_TARGET = {"kind": "llvm", "num-cores": 2}
TUNE_JOBS = [("matmul_64", 32), ("softmax_64", 16)]  # (workload, max_trials_global)


def _in_process_builder_runner():
    """Builder/runner that do in this process what the stock LocalBuilder/LocalRunner workers do
    (same default_build/default_export and alloc/run_evaluator functions). Used only when
    `cloudpickle` (needed by TVM's PopenPool workers) is not installed."""
    # pylint: disable=import-outside-toplevel
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
    from tvm.s_tir.meta_schedule.builder import local_builder
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, PyRunner, local_runner

    @derived_object
    class InProcessBuilder(PyBuilder):
        def build(self, build_inputs):
            results = []
            for inp in build_inputs:
                try:
                    rt_mod = local_builder.default_build(inp.mod, inp.target, None)
                    results.append(BuilderResult(local_builder.default_export(rt_mod), None))
                except Exception as err:  # pylint: disable=broad-except
                    results.append(BuilderResult(None, f"InProcessBuilder: {err}"))
            return results

    @derived_object
    class InProcessRunner(PyRunner):
        def __init__(self):
            super().__init__()
            self.config = EvaluatorConfig._normalized(None)  # pylint: disable=protected-access

        def run(self, runner_inputs):
            futures = []
            for inp in runner_inputs:
                try:
                    res = local_runner._worker_func(  # pylint: disable=protected-access
                        None, None, None, self.config, 1, str(inp.artifact_path),
                        str(inp.device_type), tuple(a.as_json() for a in inp.args_info),
                    )  # fmt: skip
                    fut = local_runner.LocalRunnerFuture(res=res, error_message=None)
                except Exception as err:  # pylint: disable=broad-except
                    fut = local_runner.LocalRunnerFuture(res=None, error_message=str(err))
                futures.append(fut)
            return futures

    return InProcessBuilder(), InProcessRunner()


def builder_runner():
    import importlib.util  # pylint: disable=import-outside-toplevel

    if importlib.util.find_spec("cloudpickle") is not None:
        return (
            ms.builder.LocalBuilder(timeout_sec=180),
            ms.runner.LocalRunner(timeout_sec=60),
            "stock ms.builder.LocalBuilder(timeout_sec=180) + ms.runner.LocalRunner(timeout_sec=60)",
        )
    builder, runner = _in_process_builder_runner()
    return (
        builder,
        runner,
        "in-process PyBuilder/PyRunner calling local_builder.default_build/default_export and "
        "local_runner._worker_func (the stock LocalBuilder/LocalRunner need `cloudpickle`, which "
        "is not installed in this venv)",
    )


def run_tuning(mods):
    summary = []
    for name, trials in TUNE_JOBS:
        builder, runner, how = builder_runner()
        out = os.path.join(TUNING_DIR, name)
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="ms_tune_") as work_dir:
            db = ms.tune_tir(
                mods[name],
                Target(TUNE_TARGET),
                work_dir,
                max_trials_global=trials,
                num_trials_per_iter=16,
                builder=builder,
                runner=runner,
                seed=SEED,
                num_tuning_cores=2,
            )
            n_records = len(db.get_all_tuning_records())
            if os.path.isdir(out):
                shutil.rmtree(out)
            os.makedirs(out)
            for fname in ["database_workload.json", "database_tuning_record.json"]:
                shutil.copyfile(os.path.join(work_dir, fname), os.path.join(out, fname))
        secs = time.time() - t0
        summary.append((name, trials, n_records, secs, how))
        log(f"[tuning] {name}: {trials} trials, {n_records} records, {secs:.0f}s ({how})")
    return summary
