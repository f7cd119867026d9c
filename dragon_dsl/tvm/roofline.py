"""What the roofline needs to know about a workload, read from its TensorIR (the evaluation's
`dragon_dsl.eval.workload_info` names it; TVM is imported on first use).

FLOPs: for every block, (number of block instances = product of its iteration domains) x
(arithmetic operations in the value it stores). Counted: +, -, *, /, %, floor div/mod, min,
max, and calls of math intrinsics (exp, sqrt, tanh, ...) as one each; not counted: casts,
comparisons, logic, `if_then_else` itself (its branches are), and index arithmetic (loads
are not entered). A block's `init` (the reduction's starting value) stores a constant and
costs nothing. So a matmul C[i, j] += A[i, k] * B[k, j] counts 2 * M * N * K.

Bytes: the compulsory traffic, every parameter buffer once (inputs read, outputs written,
in-out buffers both). Intermediate buffers are assumed to stay on chip, so this is the
least traffic any schedule can reach, and the roofline it gives is a true upper bound.

The compute dtype (which picks the peak FLOP/s) is the input dtype of the block with the
most FLOPs: a float16 matmul accumulating in float32 runs on float16 tensor cores.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dragon_dsl.tvm.blocks import nodes, sblocks, type_key

_ARITH = {
    "prim.Add",
    "prim.Sub",
    "prim.Mul",
    "prim.Div",
    "prim.Mod",
    "prim.FloorDiv",
    "prim.FloorMod",
    "prim.Min",
    "prim.Max",
}
# call names without their namespace ("prim.if_then_else" in TVM 0.27, "tir." before)
_NOT_ARITH_CALLS = {
    "if_then_else",
    "likely",
    "reinterpret",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "shift_left",
    "shift_right",
    "isnan",
    "isinf",
    "isfinite",
}


@dataclass(frozen=True)
class WorkloadInfo:
    flops: int
    bytes: int
    dtype: str  # compute dtype (see the module docstring)
    n_blocks: int

    def to_json(self) -> dict:
        return asdict(self)


def count_ops(expr) -> int:
    """Arithmetic operations of an expression, not entering loads (their indices are addressing)."""
    key = type_key(expr)
    if key == "ir.TensorLoad" or key in ("ir.IntImm", "ir.FloatImm", "ir.Var", "ir.StringImm"):
        return 0
    if key in _ARITH:
        return 1 + count_ops(expr.a) + count_ops(expr.b)
    if key == "ir.Call":
        name = str(getattr(expr.op, "name", "")).rsplit(".", 1)[-1]
        own = 0 if name in _NOT_ARITH_CALLS else 1
        if name == "if_then_else":  # the condition is a predicate; one branch runs
            return max(count_ops(expr.args[1]), count_ops(expr.args[2]))
        return own + sum(count_ops(a) for a in expr.args)
    if key == "prim.Select":
        return max(count_ops(expr.true_value), count_ops(expr.false_value))
    if key in ("prim.Cast",):
        return count_ops(expr.value)
    if hasattr(expr, "a") and hasattr(expr, "b"):  # comparisons, and/or: predicates, not arithmetic
        return count_ops(expr.a) + count_ops(expr.b)
    return 0


def _stores(stmt, out: list) -> None:
    out.extend(nodes(stmt, "tirx.BufferStore", order="post"))


def _load_dtypes(store) -> list:
    """Dtypes of what a store reads, leaving out the buffer it updates (a reduction's accumulator)."""
    return [
        str(n.source.ty.dtype)
        for n in nodes(store.value, "ir.TensorLoad", order="post")
        if hasattr(n.source, "ty") and not n.source.same_as(store.buffer)
    ]


def analyse(mod) -> WorkloadInfo:
    """FLOPs, compulsory bytes and compute dtype of a workload's `main`."""
    import numpy as np

    func = mod["main"]
    blocks = sblocks(func)
    total = 0
    heaviest = (-1, None)
    for block in blocks:
        if not block.iter_vars:  # the root block: its body holds the others
            continue
        instances = 1
        for iv in block.iter_vars:
            instances *= int(iv.dom.extent)
        stores: list = []
        _stores(block.body, stores)
        ops = sum(count_ops(s.value) for s in stores)
        flops = instances * ops
        total += flops
        if flops > heaviest[0]:
            dtypes = [d for s in stores for d in _load_dtypes(s)]
            heaviest = (flops, dtypes[0] if dtypes else None)
    nbytes = 0
    out_dtype = None
    for p in func.params:
        shape = [int(s) for s in p.ty.shape]
        dtype = str(p.ty.dtype)
        out_dtype = dtype
        nbytes += int(np.prod(shape, dtype=np.int64)) * _itemsize(dtype)
    return WorkloadInfo(int(total), int(nbytes), heaviest[1] or out_dtype or "float32", len(blocks))


def _itemsize(dtype: str) -> int:
    if dtype == "bool":
        return 1
    digits = "".join(ch for ch in dtype if ch.isdigit())
    bits = int(digits) if digits else 32
    return max(1, bits // 8)
