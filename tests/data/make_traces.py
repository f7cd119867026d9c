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
# seeds tried per design space (random GPU candidates often fail VerifyGPUCode)
MAX_SAMPLE_ATTEMPTS = {"nvidia/nvidia-h100": 40, "llvm": 8}

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
    """None if expected_mod is well-formed and json.dumps/loads + apply_json_to_schedule on a
    fresh schedule of mod reproduces it; otherwise the reason."""
    try:
        s_tir.analysis.verify_well_formed(expected_mod, True)
    except Exception as err:
        return f"ill-formed module: {str(err).strip().splitlines()[-1][:300]}"
    try:
        obj = json.loads(json.dumps(trace, ensure_ascii=False))
        sch = s_tir.Schedule(mod)
        s_tir.Trace.apply_json_to_schedule(obj, sch)
        tvm.ir.assert_structural_equal(sch.mod, expected_mod)
    except Exception as err:
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
    A: T.Buffer((64, 64), "float32"),
    Idx: T.Buffer((16,), "int32"),
    B: T.Buffer((16, 64), "float32"),
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
    A: T.Buffer((31, 17), "float32"),
    B: T.Buffer((17, 31), "float32"),
    C: T.Buffer((31, 31), "float32"),
):
    for i, j, k in T.grid(31, 31, 17):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func(s_tir=True)
def two_consumers_32(
    A: T.Buffer((32, 32), "float32"),
    C: T.Buffer((32, 32), "float32"),
    D: T.Buffer((32, 32), "float32"),
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
            f.write(text + "\n")
        with open(path, encoding="utf-8") as f:
            back = tvm.script.parser.parse(f.read())
        assert isinstance(back, tvm.IRModule), name
        assert [gv.name_hint for gv in back.get_global_vars()] == ["main"], name
        tvm.ir.assert_structural_equal(back, mod)
        s_tir.analysis.verify_well_formed(back, True)
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
            except Exception as err:
                msg = [ln for ln in str(err).splitlines() if "rror" in ln or "primitive" in ln]
                msg = " ".join(x.strip() for x in msg[-2:])[:300]
                msg = f"{type(err).__name__}: {msg}"
                drops.append((name, tkey, "design_space", "generate", msg))
                stats[(tkey, "design_space", "generation failed")] += 1
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
                for attempt in range(MAX_SAMPLE_ATTEMPTS[tkey]):
                    if got >= SAMPLES_PER_SPACE:
                        break
                    # Schedule seeds must lie in [1, 2**31 - 1]
                    sseed = 1 + (seed * 1000 + s_idx * 100 + attempt) % (2**31 - 2)
                    try:
                        sch, failed = sample_candidate(mod, space, postprocs, sseed)
                    except Exception as err:
                        sch, failed = None, f"replay raised {type(err).__name__}"
                    if sch is None:
                        stats[(tkey, "sampled", f"postproc/replay failed: {failed}")] += 1
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
ODD_STRING = (
    "q\"uo'te \\ back\\slash\nnewline\ttab \u00e9 \u4e2d \U0001f600 "
    '"" None b0 {"looks": "json"}'
)


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
    return (
        "split with sampled/None/int factors, fuse, parallel/unroll/vectorize, cache_write + "
        "reverse_compute_at, decompose_reduction, annotate with ExprRV/str (quotes, "
        "backslash, newline, non-ASCII)/empty str/int/float/bool/nested list/list/dict, "
        "unannotate before and after enter_postproc"
    )


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
    return (
        "shared-memory tiling: split/reorder/fuse, bind blockIdx.x/threadIdx.x, cache_read "
        "shared + compute_at + storage_align, cache_write local + reverse_compute_at"
    )


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
    return (
        "get_output_blocks/get_child_blocks/get_consumers/get_producers, "
        "reverse_compute_inline, transform_block_layout (flatten 2-D -> 1-D), bind"
    )


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
    return (
        "compute_inline x2, reverse_compute_inline, sample_compute_location + compute_at with"
        " the sampled LoopRV, reverse_compute_at"
    )


def hw_decompose_padding(sch):
    pad = sch.get_sblock("pad_temp")
    conv = sch.get_sblock("conv2d_nchw")
    loops = sch.get_loops(pad)
    sch.decompose_padding(pad, loops[1])
    sch.reorder_block_iter_var(conv, [1, 0, 2, 3, 4, 5, 6])
    sch.add_unit_loop(conv)
    lp = sch.get_loops(conv)
    sch.add_unit_loop(lp[3])
    return (
        "decompose_padding of the pad block, reorder_block_iter_var, add_unit_loop on a block"
        " and on a loop"
    )


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
    return (
        "transform_layout with an index map and a float pad_value (64 -> 13x5), and without "
        "pad_value"
    )


def hw_transform_layout_im_pad(sch):
    b = sch.get_sblock("transpose")
    sch.transform_layout(
        b, ("write", 0), lambda i, j: [i // 3, j, i % 3],
        pad_value=lambda a, b, c: tirx.Cast("float32", a * 3 + c),
    )
    sch.transform_layout(b, "A", lambda i, j: [j, i], assume_injective_transform=True)
    return (
        "transform_layout with an IndexMap (lambda) pad_value, and with "
        "assume_injective_transform=True"
    )


def hw_two_consumers_gpu(sch):
    bb = sch.get_sblock("B")
    c = sch.get_sblock("C")
    d = sch.get_sblock("D")
    sch.annotate_buffer_access(bb, 0, "read", lambda vi, vj: ((vi, vi + 1), (vj, vj + 1)))
    sch.merge(sch.get_loops(c)[0], sch.get_loops(d)[0])
    sch.set_scope(bb, 0, "shared")
    sch.unsafe_set_dtype(bb, 0, "float16")
    return (
        "annotate_buffer_access (read region), merge of two sibling loop nests, set_scope "
        "shared, unsafe_set_dtype float16"
    )


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
    return (
        "cache_index of the index expressions (cse_thresh=1), then unsafe_hide_buffer_access "
        "of the block's first read"
    )


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
    return (
        "sample_partitioned_tile + split with its factors, loop_partition with None/int "
        "factors, get_sblock of a partition block"
    )


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
    return (
        "tensorize the 16x4 u8*i8->i32 dot product with the built-in x86 intrinsic "
        "dot_16x4_vnni (needs `import tvm.s_tir.tensor_intrin` before replay)"
    )


def hw_tensorize_block(sch):
    b = sch.get_sblock("compute")
    i, j, k = sch.get_loops(b)
    jo, ji = sch.split(j, [None, 16])
    ko, ki = sch.split(k, [None, 4])
    sch.reorder(i, jo, ko, ji, ki)
    sch.decompose_reduction(b, ko)
    blk = sch.blockize(ji, preserve_unit_iters=False)
    sch.tensorize(blk, "dot_16x4_avx512", preserve_unit_iters=False)
    return (
        "blockize, then tensorize the block with the built-in intrinsic dot_16x4_avx512 "
        "(needs `import tvm.s_tir.tensor_intrin` before replay)"
    )


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
    # registers the built-in tensor intrinsics used by the tensorize cases
    import tvm.s_tir.tensor_intrin  # noqa: F401

    lines, failures = [], []
    for case, wname, target, fn, needs_intrin in HANDWRITTEN:
        mod = mods[wname]
        # cache_inplace fails the debug_mask="all" stage-pipeline verification (field notes)
        dmask = "none" if case == "cache_inplace" else "all"
        sch = s_tir.Schedule(mod, seed=SEED, debug_mask=dmask)
        try:
            note = fn(sch)
            tj = trace_json(sch)
        except Exception as err:
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
                except Exception as err:
                    results.append(BuilderResult(None, f"InProcessBuilder: {err}"))
            return results

    @derived_object
    class InProcessRunner(PyRunner):
        def __init__(self):
            super().__init__()
            self.config = EvaluatorConfig._normalized(None)

        def run(self, runner_inputs):
            futures = []
            for inp in runner_inputs:
                try:
                    res = local_runner._worker_func(
                        None, None, None, self.config, 1, str(inp.artifact_path),
                        str(inp.device_type), tuple(a.as_json() for a in inp.args_info),
                    )  # fmt: skip
                    fut = local_runner.LocalRunnerFuture(res=res, error_message=None)
                except Exception as err:
                    fut = local_runner.LocalRunnerFuture(res=None, error_message=str(err))
                futures.append(fut)
            return futures

    return InProcessBuilder(), InProcessRunner()


def builder_runner():
    import importlib.util

    if importlib.util.find_spec("cloudpickle") is not None:
        return (
            ms.builder.LocalBuilder(timeout_sec=180),
            ms.runner.LocalRunner(timeout_sec=60),
            "stock ms.builder.LocalBuilder(timeout_sec=180) + "
            "ms.runner.LocalRunner(timeout_sec=60)",
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


# ---------------------------------------------------------------------------------------------
# Output, re-validation, READMEs
# ---------------------------------------------------------------------------------------------


def write_jsonl(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


def revalidate_from_disk():
    """Fresh read of every file: workloads parse, every trace line applies to its workload."""
    mods = {}
    for fname in sorted(os.listdir(WORKLOAD_DIR)):
        with open(os.path.join(WORKLOAD_DIR, fname), encoding="utf-8") as f:
            mod = tvm.script.parser.parse(f.read())
        assert [gv.name_hint for gv in mod.get_global_vars()] == ["main"], fname
        mods[fname[: -len(".tvmscript")]] = mod
    counts = Counter()
    for fname in ["design_spaces.jsonl", "sampled.jsonl", "handwritten.jsonl"]:
        with open(os.path.join(TRACE_DIR, fname), encoding="utf-8") as f:
            for line in f:
                obj = json.loads(line)
                assert obj["target"] in TARGETS, obj["target"]
                sch = s_tir.Schedule(mods[obj["workload"]])
                s_tir.Trace.apply_json_to_schedule(obj["trace"], sch)
                counts[fname] += 1
    for name in os.listdir(TUNING_DIR):
        d = os.path.join(TUNING_DIR, name)
        if not os.path.isdir(d):
            continue
        with open(os.path.join(d, "database_tuning_record.json"), encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                sch = s_tir.Schedule(mods[name])
                s_tir.Trace.apply_json_to_schedule(rec[1][0], sch)  # Split bools are 1/0 here
                counts[f"tuning/{name}"] += 1
    return mods, counts


def kind_coverage(hw_lines):
    union = set()
    for line in hw_lines:
        assert line["kinds"] == kinds_of(line["trace"])
        union |= set(line["kinds"])
    missing = [k for k in ALL_KINDS if k not in union]
    unknown = sorted(union - set(ALL_KINDS))
    log(f"[kinds] handwritten union covers {len(union & set(ALL_KINDS))}/52 kinds")
    log(f"[kinds] missing: {missing}  unknown: {unknown}")
    return union, missing


def fmt_target(t):
    return json.dumps(t)


def write_readmes(mods, ds, sp, hw, tuning, drops, stats, missing, runtime):
    if tuning is not None:
        tl = "\n".join(
            f"| `{n}` | {trials} | {recs} | {secs:.0f} |" for n, trials, recs, secs, _ in tuning
        )
        how = tuning[0][4] if tuning else ""
        treadme = f"""# Short MetaSchedule CPU tuning runs

TVM {tvm.__version__}, apache-tvm-ffi {tvm_ffi.__version__}, Python {sys.version.split()[0]}.

Command (from the repository root; the same run also regenerates everything else in
`tests/data`):

    .venv/bin/python tests/data/make_traces.py

Its function `run_tuning` calls, for each workload below,

    ms.tune_tir(mod, Target({json.dumps(TUNE_TARGET)}), work_dir,
                max_trials_global=<trials>, num_trials_per_iter=16,
                builder=<builder>, runner=<runner>, seed={SEED}, num_tuning_cores=2)

with `mod` parsed from `tests/data/workloads/<workload>.tvmscript`, and then
`database_workload.json` and `database_tuning_record.json` copied from `work_dir` unchanged.
Builder/runner used for these files: {how}. When `cloudpickle` is importable the script uses the
stock `ms.builder.LocalBuilder(timeout_sec=180)` and `ms.runner.LocalRunner(timeout_sec=60)`
instead (checked: 16 trials of `matmul_64` took 42 s that way, the default 30 s builder timeout
was not hit). The file format is the same either way.

| workload | max_trials_global | records | wall time (s) |
|---|---|---|---|
{tl}

Format (raw on-disk `JSONDatabase`): `database_workload.json` has one line
`["<structural hash>", "<base64>"]`, where the base64 decodes to an 8-byte little-endian length
followed by the module's FFI JSON graph (indent 2); each line of
`database_tuning_record.json` is
`[workload_index, [trace, run_secs, target, args_info]]`, where `trace` is the same
`[[insts], [decisions]]` layout as in `traces/*.jsonl` but written by C++ `JSONDumps`
(Split's bools as `1`/`0`, floats with 20 significant digits, e.g. run_secs
`[4.1559647272727271502e-05]`). Every record's trace was re-applied to the workload with
`Trace.apply_json_to_schedule` as a check.
"""
        with open(os.path.join(TUNING_DIR, "README.md"), "w", encoding="utf-8") as f:
            f.write(treadme)

    per = Counter()
    wl_per_target = defaultdict(set)
    for line in ds + sp + hw:
        per[(fmt_target(line["target"]), line["source"])] += 1
        if line["source"] != "handwritten":
            wl_per_target[fmt_target(line["target"])].add(line["workload"])
    targets = [fmt_target(t) for t in TARGETS]
    rows = []
    for t in targets:
        rows.append(
            f"| `{t}` | {len(wl_per_target[t])} | {per[(t, 'design_space')]} | "
            f"{per[(t, 'sampled')]} | {per[(t, 'handwritten')]} |"
        )
    drop_lines = (
        "\n".join(f"- `{d[0]}` / `{d[1]}` / {d[2]} #{d[3]}: {d[4]}" for d in drops) or "- none"
    )
    fail_lines = "\n".join(
        f"- {t} / {src}: {reason}: {n}" for (t, src, reason), n in sorted(stats.items())
    )
    files = ["make_traces.py", "tuning/README.md"]
    for sub in ["workloads", "traces", "tuning"]:
        for root, _dirs, fnames in os.walk(os.path.join(HERE, sub)):
            for fname in fnames:
                if fname.endswith((".tvmscript", ".jsonl", ".json")):
                    files.append(os.path.relpath(os.path.join(root, fname), HERE))
    file_lines = "\n".join(
        f"- `{f}` ({os.path.getsize(os.path.join(HERE, f))} bytes)"
        for f in sorted(files)
        if os.path.exists(os.path.join(HERE, f))
    )
    readme = f"""# TVM schedule-trace fixtures

Generated by `make_traces.py` with apache-tvm {tvm.__version__} (apache-tvm-ffi
{tvm_ffi.__version__}). Regenerate from the repository root with

    .venv/bin/python tests/data/make_traces.py

(deterministic: fixed seeds; only the measured run times in `tuning/` change; last run took
{runtime:.0f} s on a 2-core machine; `--skip-tuning` leaves `tuning/` untouched).

## Layout

- `workloads/<name>.tvmscript` ({len(mods)} files): `mod.script()` of an IRModule with one PrimFunc
  `main`, written after one print/parse cycle (`tvm.script.parser.parse`), so names are stable.
  Load with `tvm.script.parser.parse(open(path).read())`. MetaSchedule benchmark workloads
  (`te_workload.create_te_workload(KEY, idx)`, named `<key>_<idx>`, fixed shapes), te_workload
  functions with small shapes (`matmul_64`, `bmm_4x32`, ...), a few hand-written elementwise /
  reduction / transpose kernels, and small extras used by the hand-written schedules
  (`pool_chain_1d`, `matmul_bias_32`, `dense_u8i8_16x32x16`, `gather_64`, `inplace_add_64`,
  `matmul_31x31x17`, `two_consumers_32`).
- `traces/design_spaces.jsonl`: MetaSchedule design spaces (`TuneContext(...,
  space_generator="post-order-apply", search_strategy="evolutionary").generate_design_space()`).
- `traces/sampled.jsonl`: per design space up to {SAMPLES_PER_SPACE} distinct candidates, re-sampled
  and post-processed the way EvolutionarySearch does it: `Trace(space.trace.insts, {{}})` applied
  (`remove_postproc=True`) to a fresh `Schedule(mod, seed=...)`, then `sch.enter_postproc()` and
  every postprocessor of the context's space generator (`postproc.apply(sch)`); a candidate
  whose postprocessor fails is skipped. These traces contain `EnterPostproc` and the
  post-processing instructions after it.
- `traces/handwritten.jsonl`: hand-written schedules that together use all 52 instruction kinds.
- `tuning/<workload>/database_workload.json`, `database_tuning_record.json`: the raw files of
  a MetaSchedule `JSONDatabase` after a short `ms.tune_tir` run (see `tuning/README.md`).
  Raw on-disk format: Split's bools are written as `1`/`0` there.

## Line format (all three `.jsonl` files, one JSON object per line, UTF-8)

    {{"workload": "<name>", "target": <target>, "source": "design_space" | "sampled" | "handwritten",
     "trace": [[[kind, inputs, attrs, outputs], ...], [[inst_index, decision], ...]]}}

- `workload`: file stem in `workloads/`.
- `target`: exactly `"nvidia/nvidia-h100"` (a tag string) or `{{"kind": "llvm", "num-cores": 2}}` (a
  dict); `tvm.target.Target(target)` accepts both.
- `trace`: `sch.trace.as_json(remove_postproc=False)` converted to plain JSON (bool IntImm -> bool,
  IntImm -> int, FloatImm -> float, String -> str, Array -> list, Map -> dict). Replay with
  `s_tir.Trace.apply_json_to_schedule(trace, s_tir.Schedule(mod))`.
- handwritten lines also have `kinds` (sorted instruction kinds used), `note` (what the schedule
  does) and, where the trace tensorizes, `"needs_tensor_intrin": true`: run
  `import tvm.s_tir.tensor_intrin` before replaying it.

Every line was checked: `json.loads(json.dumps(trace))` applied to a fresh schedule of the
workload gives a module `tvm.ir.assert_structural_equal` to the scheduled one; lines that failed
were dropped (listed below). Compare modules, not JSON text: IndexMap inputs are FFI JSON-graph
strings that carry `tvm_version`.

## Counts

| target | workloads with design spaces | design_space | sampled | handwritten |
|---|---|---|---|---|
{chr(10).join(rows)}

Totals: {len(ds)} design spaces, {len(sp)} sampled, {len(hw)} handwritten lines;
kinds missing from the handwritten union: {missing or "none"}.

Dropped (failed generation or replay check):
{drop_lines}

Sampling attempts that were skipped (postprocessor failed, duplicate candidate, or replay
check failed):
{fail_lines}

## Files

{file_lines}
"""
    with open(os.path.join(HERE, "README.md"), "w", encoding="utf-8") as f:
        f.write(readme)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-tuning", action="store_true", help="leave tests/data/tuning as is")
    args = parser.parse_args()
    t_start = time.time()
    log(f"TVM {tvm.__version__}, tvm-ffi {tvm_ffi.__version__}")
    os.makedirs(TRACE_DIR, exist_ok=True)
    os.makedirs(TUNING_DIR, exist_ok=True)

    mods = build_workloads()

    t0 = time.time()
    ds, sp, stats, drops = gen_spaces_and_samples(mods)
    write_jsonl(os.path.join(TRACE_DIR, "design_spaces.jsonl"), ds)
    write_jsonl(os.path.join(TRACE_DIR, "sampled.jsonl"), sp)
    log(f"[spaces] {len(ds)} design spaces, {len(sp)} sampled in {time.time() - t0:.0f}s")

    t0 = time.time()
    hw, hw_fail = gen_handwritten(mods)
    write_jsonl(os.path.join(TRACE_DIR, "handwritten.jsonl"), hw)
    drops += [(c, "-", "handwritten", stage, msg) for c, stage, msg in hw_fail]
    log(f"[handwritten] {len(hw)} lines, {len(hw_fail)} failed, {time.time() - t0:.0f}s")
    _, missing = kind_coverage(hw)

    tuning = None
    if not args.skip_tuning:
        t0 = time.time()
        tuning = run_tuning(mods)
        log(f"[tuning] {time.time() - t0:.0f}s")

    _, counts = revalidate_from_disk()
    log(f"[revalidate] re-read from disk and applied: {dict(counts)}")

    runtime = time.time() - t_start
    write_readmes(mods, ds, sp, hw, tuning, drops, stats, missing, runtime)

    per = Counter((fmt_target(x["target"]), x["source"]) for x in ds + sp + hw)
    log("[summary] lines per (target, source):")
    for key, n in sorted(per.items()):
        log(f"    {key[0]:36s} {key[1]:13s} {n}")
    log(f"[summary] dropped: {len(drops)}")
    for d in drops:
        log(f"    {d}")
    log(f"[summary] total runtime {runtime:.0f}s")
    if missing:
        sys.exit(f"instruction kinds not covered: {missing}")


if __name__ == "__main__":
    main()
