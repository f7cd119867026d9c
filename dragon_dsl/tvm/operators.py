"""Operator builders: TVM te definitions of the workload families (the TVM side of the generator).

Each builder takes plain parameters (ints and strings) and returns the list of te tensors,
inputs first and the output last, for `te.create_prim_func`. `dragon_dsl.corpus.families`
draws the parameters; this module is the only place that spells the computations.

dtype conventions: `dtype` is the storage type of inputs and output ("float16", "float32",
"bfloat16"); reductions over fp16/bf16 accumulate in float32 (as every production kernel
does) and cast back once at the end, unless a builder says otherwise. int8 GEMMs accumulate in
int32 and dequantise with per-row and per-column scales.
"""

from __future__ import annotations


def _te():
    from tvm import te, tirx

    return te, tirx


def _acc(dtype: str) -> str:
    return "float32" if dtype in ("float16", "bfloat16") else dtype


def _out(te, value, dtype):
    return value.astype(dtype)  # TVM drops a cast to the value's own type


def catalogue(name: str):
    """A builder of MetaSchedule's own te_workload catalogue."""
    from tvm.s_tir.meta_schedule.testing import te_workload

    return getattr(te_workload, name)


# ---- classic families ---------------------------------------------------------------------------


def gemv(m: int, k: int, in_dtype: str, out_dtype: str):
    te, tirx = _te()
    a = te.placeholder((m, k), in_dtype, name="A")
    x = te.placeholder((k,), in_dtype, name="X")
    r = te.reduce_axis((0, k), name="k")
    y = te.compute((m,), lambda i: te.sum(a[i, r].astype(out_dtype) * x[r].astype(out_dtype), axis=r), name="Y")
    return [a, x, y]


def layer_norm(m: int, n: int, rms: int, dtype: str = "float32"):
    te, tirx = _te()
    acc = _acc(dtype)
    x = te.placeholder((m, n), dtype, name="X")
    g = te.placeholder((n,), dtype, name="gamma")
    r1 = te.reduce_axis((0, n), name="k")
    r2 = te.reduce_axis((0, n), name="k2")

    def xv(i, j):
        return x[i, j] if dtype == acc else x[i, j].astype(acc)

    def gv(j):
        return g[j] if dtype == acc else g[j].astype(acc)

    if rms:
        ss = te.compute((m,), lambda i: te.sum(xv(i, r1) * xv(i, r1), axis=r1), name="sumsq")
        y = te.compute(
            (m, n),
            lambda i, j: _out(te, xv(i, j) * te.rsqrt(ss[i] / n + tirx.const(1e-6, acc)) * gv(j), dtype),
            name="Y",
        )
        return [x, g, y]
    # te allows a reduction only at the top of a compute: divide inside it
    mean = te.compute((m,), lambda i: te.sum(xv(i, r1) / n, axis=r1), name="mean")
    var = te.compute((m,), lambda i: te.sum((xv(i, r2) - mean[i]) * (xv(i, r2) - mean[i]) / n, axis=r2), name="var")
    y = te.compute(
        (m, n),
        lambda i, j: _out(te, (xv(i, j) - mean[i]) * te.rsqrt(var[i] + tirx.const(1e-5, acc)) * gv(j), dtype),
        name="Y",
    )
    return [x, g, y]


def reduction(m: int, n: int, axis: int, op: str, dtype: str = "float32"):
    te, tirx = _te()
    acc = _acc(dtype) if op == "sum" else dtype
    x = te.placeholder((m, n), dtype, name="X")
    f = te.sum if op == "sum" else te.max
    if axis == 1:
        r = te.reduce_axis((0, n), name="k")
        y = te.compute((m,), lambda i: f(x[i, r].astype(acc), axis=r), name="Y")
    else:
        r = te.reduce_axis((0, m), name="k")
        y = te.compute((n,), lambda j: f(x[r, j].astype(acc), axis=r), name="Y")
    return [x, y]


def elementwise_chain(m: int, n: int, ops: str, dtype: str = "float32"):
    te, tirx = _te()
    a = te.placeholder((m, n), dtype, name="A")
    b = te.placeholder((m, n), dtype, name="B")
    unary = {"relu": lambda v: te.max(v, tirx.const(0.0, dtype)), "sigmoid": te.sigmoid, "exp": te.exp, "tanh": te.tanh}
    binary = {
        "add": lambda u, v: u + v,
        "mul": lambda u, v: u * v,
        "sub": lambda u, v: u - v,
        "max": lambda u, v: te.max(u, v),
    }

    def stage(prev, op, idx):  # te.compute rejects lambdas with default arguments: close over these
        if op in unary:
            return te.compute((m, n), lambda i, j: unary[op](prev[i, j]), name=f"T{idx}")
        return te.compute((m, n), lambda i, j: binary[op](prev[i, j], b[i, j]), name=f"T{idx}")

    cur = a
    for idx, op in enumerate(ops.split("-")):
        cur = stage(cur, op, idx)
    return [a, b, cur]


def _gelu(te, v):
    return 0.5 * v * (1.0 + te.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))


def matmul_epilogue(m: int, n: int, k: int, epilogue: str):
    te, tirx = _te()
    a = te.placeholder((m, k), "float32", name="A")
    w = te.placeholder((k, n), "float32", name="W")
    bias = te.placeholder((n,), "float32", name="bias")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * w[r, j], axis=r), name="C")
    if epilogue == "bias":
        out = te.compute((m, n), lambda i, j: c[i, j] + bias[j], name="D")
    elif epilogue == "bias_relu":
        out = te.compute((m, n), lambda i, j: te.max(c[i, j] + bias[j], tirx.const(0.0, "float32")), name="D")
    else:  # bias_gelu (tanh approximation)
        out = te.compute((m, n), lambda i, j: _gelu(te, c[i, j] + bias[j]), name="D")
    return [a, w, bias, out]


def pool2d(
    n: int, h: int, w: int, c: int, kernel: int, stride: int, op: str, dtype: str = "float32", layout: str = "NHWC"
):
    te, tirx = _te()
    oh, ow = (h - kernel) // stride + 1, (w - kernel) // stride + 1
    rh = te.reduce_axis((0, kernel), name="rh")
    rw = te.reduce_axis((0, kernel), name="rw")
    acc = _acc(dtype)
    if layout == "NHWC":
        x = te.placeholder((n, h, w, c), dtype, name="X")
        shape = (n, oh, ow, c)

        def at(b, i, j, ch):
            return x[b, i * stride + rh, j * stride + rw, ch]
    else:
        x = te.placeholder((n, c, h, w), dtype, name="X")
        shape = (n, c, oh, ow)

        def at(b, ch, i, j):
            return x[b, ch, i * stride + rh, j * stride + rw]

    if op == "max":
        y = te.compute(shape, lambda *i: te.max(at(*i), axis=[rh, rw]), name="Y")
        return [x, y]
    s = te.compute(shape, lambda *i: te.sum(at(*i).astype(acc), axis=[rh, rw]), name="S")
    y = te.compute(shape, lambda *i: _out(te, s[i] / float(kernel * kernel), dtype), name="Y")
    return [x, y]


def permute(a: int, b: int, c: int, perm: str, dtype: str = "float32"):
    te, tirx = _te()
    x = te.placeholder((a, b, c), dtype, name="X")
    order = [int(p) for p in perm]
    dims = (a, b, c)
    shape = tuple(dims[p] for p in order)
    inverse = [order.index(i) for i in range(3)]
    y = te.compute(shape, lambda *idx: x[tuple(idx[inverse[i]] for i in range(3))], name="Y")
    return [x, y]


# ---- operators of today's models (LLMs, vision) -----------------------------------------------


def attention_scores(heads: int, q_len: int, kv_len: int, head_dim: int, dtype: str, acc: str = ""):
    """S[h, i, j] = (Q[h, i, :] . K[h, j, :]) * head_dim^-0.5: prefill (q_len = kv_len) or decode
    against a KV cache (q_len 1, kv_len the cache length)."""
    te, tirx = _te()
    acc = acc or _acc(dtype)
    q = te.placeholder((heads, q_len, head_dim), dtype, name="Q")
    k = te.placeholder((heads, kv_len, head_dim), dtype, name="K")
    r = te.reduce_axis((0, head_dim), name="d")
    s = te.compute(
        (heads, q_len, kv_len),
        lambda h, i, j: te.sum(q[h, i, r].astype(acc) * k[h, j, r].astype(acc), axis=r),
        name="QK",
    )
    scale = float(head_dim) ** -0.5
    out = te.compute(
        (heads, q_len, kv_len), lambda h, i, j: _out(te, s[h, i, j] * tirx.const(scale, acc), dtype), name="S"
    )
    return [q, k, out]


def attention_values(heads: int, q_len: int, kv_len: int, head_dim: int, dtype: str, acc: str = ""):
    """O[h, i, d] = sum_j P[h, i, j] * V[h, j, d]."""
    te, tirx = _te()
    acc = acc or _acc(dtype)
    p = te.placeholder((heads, q_len, kv_len), dtype, name="P")
    v = te.placeholder((heads, kv_len, head_dim), dtype, name="V")
    r = te.reduce_axis((0, kv_len), name="j")
    if acc == dtype:
        o = te.compute((heads, q_len, head_dim), lambda h, i, d: te.sum(p[h, i, r] * v[h, r, d], axis=r), name="O")
        return [p, v, o]
    o = te.compute(
        (heads, q_len, head_dim),
        lambda h, i, d: te.sum(p[h, i, r].astype(acc) * v[h, r, d].astype(acc), axis=r),
        name="Oacc",
    )
    out = te.compute((heads, q_len, head_dim), lambda h, i, d: o[h, i, d].astype(dtype), name="O")
    return [p, v, out]


def rotary(tokens: int, heads: int, head_dim: int, dtype: str):
    """Rotary position embedding (the half-split form of LLaMA): y = x * cos + rotate_half(x) * sin."""
    te, tirx = _te()
    half = head_dim // 2
    x = te.placeholder((tokens, heads, head_dim), dtype, name="X")
    cos = te.placeholder((tokens, head_dim), dtype, name="cos")
    sin = te.placeholder((tokens, head_dim), dtype, name="sin")

    def rot(t, h, d):
        return tirx.if_then_else(d < half, -x[t, h, tirx.min(d + half, head_dim - 1)], x[t, h, tirx.max(d - half, 0)])

    y = te.compute(
        (tokens, heads, head_dim), lambda t, h, d: x[t, h, d] * cos[t, d] + rot(t, h, d) * sin[t, d], name="Y"
    )
    return [x, cos, sin, y]


def gated_mlp(tokens: int, ffn: int, act: str, dtype: str):
    """The gated MLP's activation: silu(gate) * up (LLaMA) or gelu(gate) * up (Gemma)."""
    te, tirx = _te()
    acc = _acc(dtype)
    gate = te.placeholder((tokens, ffn), dtype, name="gate")
    up = te.placeholder((tokens, ffn), dtype, name="up")

    def f(v):
        return v * te.sigmoid(v) if act == "silu" else _gelu(te, v)

    y = te.compute(
        (tokens, ffn), lambda i, j: _out(te, f(gate[i, j].astype(acc)) * up[i, j].astype(acc), dtype), name="Y"
    )
    return [gate, up, y]


def global_avg_pool(n: int, c: int, h: int, w: int, layout: str, dtype: str):
    """The mean over each channel's whole plane (a CNN's head before its classifier): N x C x H x W
    (or N x H x W x C) to N x C, summed in the accumulation type, then divided and cast."""
    te, tirx = _te()
    acc = _acc(dtype)
    x = te.placeholder((n, c, h, w) if layout == "NCHW" else (n, h, w, c), dtype, name="X")
    rh = te.reduce_axis((0, h), name="rh")
    rw = te.reduce_axis((0, w), name="rw")

    def at(b, ch, i, j):
        return (x[b, ch, i, j] if layout == "NCHW" else x[b, i, j, ch]).astype(acc)

    s = te.compute((n, c), lambda b, ch: te.sum(at(b, ch, rh, rw), axis=[rh, rw]), name="S")
    y = te.compute((n, c), lambda b, ch: _out(te, s[b, ch] / tirx.const(h * w, acc), dtype), name="Y")
    return [x, y]


def mean_pool_tokens(batch: int, tokens: int, hidden: int, dtype: str):
    """The mean over a sequence's tokens (a sentence embedding): batch x tokens x hidden to
    batch x hidden, summed in the accumulation type, then divided and cast."""
    te, tirx = _te()
    acc = _acc(dtype)
    x = te.placeholder((batch, tokens, hidden), dtype, name="X")
    r = te.reduce_axis((0, tokens), name="t")
    s = te.compute((batch, hidden), lambda b, d: te.sum(x[b, r, d].astype(acc), axis=r), name="S")
    y = te.compute((batch, hidden), lambda b, d: _out(te, s[b, d] / tirx.const(tokens, acc), dtype), name="Y")
    return [x, y]


def logsumexp(rows: int, cols: int, dtype: str):
    """log(sum(exp(x))) of each row, stably (a cross-entropy loss's normaliser): the row maximum,
    the sum of exponentials past it, then their logarithm plus the maximum."""
    te, tirx = _te()
    acc = _acc(dtype)
    x = te.placeholder((rows, cols), dtype, name="X")
    r1 = te.reduce_axis((0, cols), name="k")
    mx = te.compute((rows,), lambda i: te.max(x[i, r1].astype(acc), axis=r1), name="row_max")
    r2 = te.reduce_axis((0, cols), name="k2")
    se = te.compute((rows,), lambda i: te.sum(te.exp(x[i, r2].astype(acc) - mx[i]), axis=r2), name="row_sum")
    y = te.compute((rows,), lambda i: _out(te, te.log(se[i]) + mx[i], dtype), name="Y")
    return [x, y]


def row_absmax(rows: int, cols: int, dtype: str):
    """The largest magnitude of each row, in float32 (the per-token scale of dynamic int8 or fp8
    quantisation): one reduction block."""
    te, tirx = _te()
    x = te.placeholder((rows, cols), dtype, name="X")
    r = te.reduce_axis((0, cols), name="k")
    y = te.compute((rows,), lambda i: te.max(te.abs(x[i, r]).astype("float32"), axis=r), name="Y")
    return [x, y]


def sum_of_squares(rows: int, cols: int, dtype: str):
    """The squared L2 norm of each row in the accumulation type (gradient clipping, a norm's first
    pass): one reduction block."""
    te, tirx = _te()
    acc = _acc(dtype)
    x = te.placeholder((rows, cols), dtype, name="X")
    r = te.reduce_axis((0, cols), name="k")
    y = te.compute((rows,), lambda i: te.sum(x[i, r].astype(acc) * x[i, r].astype(acc), axis=r), name="Y")
    return [x, y]


def bias_grad(tokens: int, features: int, dtype: str):
    """A linear layer's bias gradient: the output gradient summed over the tokens, per feature, in
    the accumulation type (a column sum): one reduction block."""
    te, tirx = _te()
    acc = _acc(dtype)
    dy = te.placeholder((tokens, features), dtype, name="dY")
    r = te.reduce_axis((0, tokens), name="t")
    y = te.compute((features,), lambda j: te.sum(dy[r, j].astype(acc), axis=r), name="Y")
    return [dy, y]


def softmax(rows: int, cols: int, kind: str, dtype: str):
    """Row softmax in three reductions-and-maps: `plain`, `causal` (square attention scores with
    j > i masked; cols is the key length and the last rows of a prefill see all keys) or `log`
    (log-softmax over a vocabulary)."""
    te, tirx = _te()
    acc = _acc(dtype)
    x = te.placeholder((rows, cols), dtype, name="X")
    offset = cols - rows  # causal: query i sees keys j <= i + offset
    lowest = tirx.min_value(acc)

    def val(i, j):
        v = x[i, j].astype(acc)
        return tirx.if_then_else(j > i + offset, lowest, v) if kind == "causal" else v

    r1 = te.reduce_axis((0, cols), name="k")
    mx = te.compute((rows,), lambda i: te.max(val(i, r1), axis=r1), name="row_max")
    r2 = te.reduce_axis((0, cols), name="k2")
    if kind == "log":
        se = te.compute((rows,), lambda i: te.sum(te.exp(val(i, r2) - mx[i]), axis=r2), name="row_sum")
        y = te.compute((rows, cols), lambda i, j: _out(te, val(i, j) - mx[i] - te.log(se[i]), dtype), name="Y")
        return [x, y]
    e = te.compute((rows, cols), lambda i, j: te.exp(val(i, j) - mx[i]), name="E")
    se = te.compute((rows,), lambda i: te.sum(e[i, r2], axis=r2), name="row_sum")
    y = te.compute((rows, cols), lambda i, j: _out(te, e[i, j] / se[i], dtype), name="Y")
    return [x, y]


def linear(m: int, n: int, k: int, dtype: str, epilogue: str = "none", acc: str = ""):
    """Y = X @ W^T (the layout of a transformer's linear layers), fp32 accumulation for fp16/bf16
    unless `acc` names the accumulation type (fp16 accumulation is what TVM's fp16 tensor-core
    intrinsics cover without a cast stage), with an optional epilogue: `bias`, `silu`, `gelu` or
    `residual` (adds R)."""
    te, tirx = _te()
    acc = acc or _acc(dtype)
    x = te.placeholder((m, k), dtype, name="X")
    w = te.placeholder((n, k), dtype, name="W")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(x[i, r].astype(acc) * w[j, r].astype(acc), axis=r), name="C")
    extra = []
    if epilogue == "none":
        y = te.compute((m, n), lambda i, j: _out(te, c[i, j], dtype), name="Y") if acc != dtype else c
    elif epilogue == "bias":
        b = te.placeholder((n,), dtype, name="bias")
        extra = [b]
        y = te.compute((m, n), lambda i, j: _out(te, c[i, j] + b[j].astype(acc), dtype), name="Y")
    elif epilogue == "residual":
        res = te.placeholder((m, n), dtype, name="R")
        extra = [res]
        y = te.compute((m, n), lambda i, j: _out(te, c[i, j] + res[i, j].astype(acc), dtype), name="Y")
    elif epilogue == "silu":
        y = te.compute((m, n), lambda i, j: _out(te, c[i, j] * te.sigmoid(c[i, j]), dtype), name="Y")
    else:
        y = te.compute((m, n), lambda i, j: _out(te, _gelu(te, c[i, j]), dtype), name="Y")
    return [x, w, *extra, y]


def int8_linear(m: int, n: int, k: int, out_dtype: str):
    """W8A8: int8 X and W, int32 accumulation, dequantised by per-row (token) and per-column
    (channel) scales to `out_dtype`."""
    te, tirx = _te()
    x = te.placeholder((m, k), "int8", name="X")
    w = te.placeholder((n, k), "int8", name="W")
    sx = te.placeholder((m,), "float32", name="scale_x")
    sw = te.placeholder((n,), "float32", name="scale_w")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(x[i, r].astype("int32") * w[j, r].astype("int32"), axis=r), name="C")
    y = te.compute((m, n), lambda i, j: _out(te, c[i, j].astype("float32") * sx[i] * sw[j], out_dtype), name="Y")
    return [x, w, sx, sw, y]


def dequant_linear(m: int, n: int, k: int, dtype: str, group: int):
    """Weight-only int8 quantisation: Y = X @ (W * scale)^T with one scale per `group` inputs
    of each output channel (group = k: per channel); the weight is dequantised on the fly."""
    te, tirx = _te()
    acc = _acc(dtype)
    x = te.placeholder((m, k), dtype, name="X")
    w = te.placeholder((n, k), "int8", name="W")
    s = te.placeholder((n, k // group), dtype, name="scale")
    deq = te.compute((n, k), lambda j, r: w[j, r].astype(dtype) * s[j, r // group], name="W_deq")
    r = te.reduce_axis((0, k), name="k")
    c = te.compute((m, n), lambda i, j: te.sum(x[i, r].astype(acc) * deq[j, r].astype(acc), axis=r), name="C")
    y = te.compute((m, n), lambda i, j: c[i, j].astype(dtype), name="Y") if acc != dtype else c
    return [x, w, s, y]


def conv2d(n: int, h: int, w: int, ci: int, co: int, kernel: int, stride: int, layout: str, depthwise: int, dtype: str):
    """2-d convolution, NCHW or NHWC, `kernel` x `kernel` with padding kernel // 2; depthwise
    when `depthwise` (co = ci)."""
    te, tirx = _te()
    acc = _acc(dtype)
    pad = kernel // 2
    oh, ow = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    nchw = layout == "NCHW"
    x = te.placeholder((n, ci, h, w) if nchw else (n, h, w, ci), dtype, name="X")
    co = ci if depthwise else co
    wshape = (co, 1 if depthwise else ci, kernel, kernel) if nchw else (kernel, kernel, 1 if depthwise else ci, co)
    wt = te.placeholder(wshape, dtype, name="W")

    def inside(i, j):
        return tirx.all(i >= pad, i < h + pad, j >= pad, j < w + pad)

    zero = tirx.const(0, dtype)
    if nchw:
        padded = (
            te.compute(
                (n, ci, h + 2 * pad, w + 2 * pad),
                lambda b, c, i, j: tirx.if_then_else(inside(i, j), x[b, c, i - pad, j - pad], zero),
                name="X_pad",
            )
            if pad
            else x
        )
    else:
        padded = (
            te.compute(
                (n, h + 2 * pad, w + 2 * pad, ci),
                lambda b, i, j, c: tirx.if_then_else(inside(i, j), x[b, i - pad, j - pad, c], zero),
                name="X_pad",
            )
            if pad
            else x
        )
    rh = te.reduce_axis((0, kernel), name="rh")
    rw = te.reduce_axis((0, kernel), name="rw")
    if depthwise:
        if nchw:
            y = te.compute(
                (n, co, oh, ow),
                lambda b, c, i, j: te.sum(
                    padded[b, c, i * stride + rh, j * stride + rw].astype(acc) * wt[c, 0, rh, rw].astype(acc),
                    axis=[rh, rw],
                ),
                name="Yacc",
            )
        else:
            y = te.compute(
                (n, oh, ow, co),
                lambda b, i, j, c: te.sum(
                    padded[b, i * stride + rh, j * stride + rw, c].astype(acc) * wt[rh, rw, 0, c].astype(acc),
                    axis=[rh, rw],
                ),
                name="Yacc",
            )
    else:
        rc = te.reduce_axis((0, ci), name="rc")
        if nchw:
            y = te.compute(
                (n, co, oh, ow),
                lambda b, c, i, j: te.sum(
                    padded[b, rc, i * stride + rh, j * stride + rw].astype(acc) * wt[c, rc, rh, rw].astype(acc),
                    axis=[rc, rh, rw],
                ),
                name="Yacc",
            )
        else:
            y = te.compute(
                (n, oh, ow, co),
                lambda b, i, j, c: te.sum(
                    padded[b, i * stride + rh, j * stride + rw, rc].astype(acc) * wt[rh, rw, rc, c].astype(acc),
                    axis=[rh, rw, rc],
                ),
                name="Yacc",
            )
    if acc == dtype:
        return [x, wt, y]
    out = te.compute(y.shape, lambda *i: y[i].astype(dtype), name="Y")
    return [x, wt, out]
