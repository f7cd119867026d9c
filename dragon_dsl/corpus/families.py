"""Operator families: how to build each workload (TVM te) and which shapes to draw.

A family has a builder `build(**params) -> list of te tensors` and a sampler that
draws parameters, half of the time from shapes of real model layers (LLaMA, BERT,
ResNet, MobileNet, ViT...) and otherwise from ranges. Families that MetaSchedule's
te_workload catalogue already defines use it; the others are written here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable

# Dimensions seen in real layers: hidden sizes, FFN sizes, sequence lengths, channels.
HIDDEN = (256, 512, 768, 1024, 2048, 2560, 3072, 4096, 5120)
FFN = (1024, 2048, 3072, 4096, 8192, 11008, 13824)
TOKENS = (1, 16, 32, 64, 128, 256, 512, 1024, 2048)
CHANNELS = (3, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
SPATIAL = (7, 14, 16, 28, 32, 56, 64, 112)
ELEMENTWISE_OPS = ("add", "mul", "sub", "max", "relu", "sigmoid", "exp", "tanh")


def _te():
    from tvm import te, tirx

    return te, tirx


def _dim(rng: random.Random, real: tuple, lo: int, hi: int) -> int:
    return rng.choice(real) if rng.random() < 0.5 else rng.randint(lo, hi)


# ---- builders written here -------------------------------------------------------


def gemv(m: int, k: int, in_dtype: str, out_dtype: str):
    te, tirx = _te()
    a = te.placeholder((m, k), in_dtype, name="A")
    x = te.placeholder((k,), in_dtype, name="X")
    r = te.reduce_axis((0, k), name="k")
    y = te.compute((m,), lambda i: te.sum(a[i, r].astype(out_dtype) * x[r].astype(out_dtype), axis=r), name="Y")
    return [a, x, y]


def layer_norm(m: int, n: int, rms: int):
    te, tirx = _te()
    x = te.placeholder((m, n), "float32", name="X")
    g = te.placeholder((n,), "float32", name="gamma")
    r1 = te.reduce_axis((0, n), name="k")
    r2 = te.reduce_axis((0, n), name="k2")
    if rms:
        ss = te.compute((m,), lambda i: te.sum(x[i, r1] * x[i, r1], axis=r1), name="sumsq")
        y = te.compute((m, n), lambda i, j: x[i, j] * te.rsqrt(ss[i] / n + 1e-6) * g[j], name="Y")
        return [x, g, y]
    # te allows a reduction only at the top of a compute: divide inside it
    mean = te.compute((m,), lambda i: te.sum(x[i, r1] / n, axis=r1), name="mean")
    var = te.compute((m,), lambda i: te.sum((x[i, r2] - mean[i]) * (x[i, r2] - mean[i]) / n, axis=r2), name="var")
    y = te.compute((m, n), lambda i, j: (x[i, j] - mean[i]) * te.rsqrt(var[i] + 1e-5) * g[j], name="Y")
    return [x, g, y]


def reduction(m: int, n: int, axis: int, op: str):
    te, tirx = _te()
    x = te.placeholder((m, n), "float32", name="X")
    if axis == 1:
        r = te.reduce_axis((0, n), name="k")
        f = te.sum if op == "sum" else te.max
        y = te.compute((m,), lambda i: f(x[i, r], axis=r), name="Y")
    else:
        r = te.reduce_axis((0, m), name="k")
        f = te.sum if op == "sum" else te.max
        y = te.compute((n,), lambda j: f(x[r, j], axis=r), name="Y")
    return [x, y]


def elementwise_chain(m: int, n: int, ops: str):
    te, tirx = _te()
    a = te.placeholder((m, n), "float32", name="A")
    b = te.placeholder((m, n), "float32", name="B")
    unary = {"relu": lambda v: te.max(v, tirx.const(0.0, "float32")), "sigmoid": te.sigmoid, "exp": te.exp,
             "tanh": te.tanh}
    binary = {"add": lambda u, v: u + v, "mul": lambda u, v: u * v, "sub": lambda u, v: u - v,
              "max": lambda u, v: te.max(u, v)}

    def stage(prev, op, idx):  # te.compute rejects lambdas with default arguments: close over these
        if op in unary:
            return te.compute((m, n), lambda i, j: unary[op](prev[i, j]), name=f"T{idx}")
        return te.compute((m, n), lambda i, j: binary[op](prev[i, j], b[i, j]), name=f"T{idx}")

    cur = a
    for idx, op in enumerate(ops.split("-")):
        cur = stage(cur, op, idx)
    return [a, b, cur]


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
        def gelu(v):
            return 0.5 * v * (1.0 + te.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))
        out = te.compute((m, n), lambda i, j: gelu(c[i, j] + bias[j]), name="D")
    return [a, w, bias, out]


def pool2d(n: int, h: int, w: int, c: int, kernel: int, stride: int, op: str):
    te, tirx = _te()
    x = te.placeholder((n, h, w, c), "float32", name="X")
    oh, ow = (h - kernel) // stride + 1, (w - kernel) // stride + 1
    rh = te.reduce_axis((0, kernel), name="rh")
    rw = te.reduce_axis((0, kernel), name="rw")
    if op == "max":
        y = te.compute((n, oh, ow, c), lambda b, i, j, ch: te.max(x[b, i * stride + rh, j * stride + rw, ch],
                                                                  axis=[rh, rw]), name="Y")
    else:
        s = te.compute((n, oh, ow, c), lambda b, i, j, ch: te.sum(x[b, i * stride + rh, j * stride + rw, ch],
                                                                  axis=[rh, rw]), name="S")
        y = te.compute((n, oh, ow, c), lambda b, i, j, ch: s[b, i, j, ch] / float(kernel * kernel), name="Y")
    return [x, y]


def permute(a: int, b: int, c: int, perm: str):
    te, tirx = _te()
    x = te.placeholder((a, b, c), "float32", name="X")
    order = [int(p) for p in perm]
    dims = (a, b, c)
    shape = tuple(dims[p] for p in order)
    inverse = [order.index(i) for i in range(3)]
    y = te.compute(shape, lambda *idx: x[tuple(idx[inverse[i]] for i in range(3))], name="Y")
    return [x, y]


def _catalogue(name: str):
    from tvm.s_tir.meta_schedule.testing import te_workload

    return getattr(te_workload, name)


# ---- families --------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    name: str
    build: Callable[..., list]
    sample: Callable[[random.Random], dict]


def _mm_dtypes(rng):
    return ("float16", "float32") if rng.random() < 0.4 else ("float32", "float32")


def _sample_matmul(rng):
    i, o = _mm_dtypes(rng)
    return {"n": _dim(rng, TOKENS, 1, 4096), "m": _dim(rng, HIDDEN + FFN, 16, 8192),
            "k": _dim(rng, HIDDEN + FFN, 16, 8192), "in_dtype": i, "out_dtype": o}


def _sample_bmm(rng):
    i, o = _mm_dtypes(rng)
    return {"B": rng.choice((1, 2, 4, 8, 12, 16, 32)), "N": _dim(rng, TOKENS, 8, 1024),
            "M": _dim(rng, TOKENS + (64, 128), 8, 1024), "K": rng.choice((32, 64, 80, 96, 128, 256)),
            "in_dtype": i, "out_dtype": o}


def _sample_gemv(rng):
    i, o = _mm_dtypes(rng)
    return {"m": _dim(rng, HIDDEN + FFN, 64, 16384), "k": _dim(rng, HIDDEN + FFN, 64, 16384),
            "in_dtype": i, "out_dtype": o}


def _conv_common(rng):
    k = rng.choice((1, 3, 3, 5, 7))
    return {"kernel_size": k, "stride": rng.choice((1, 1, 2)), "padding": k // 2}


def _sample_conv2d(rng, groups=False, dilated=False):
    ci = rng.choice(CHANNELS)
    co = rng.choice(CHANNELS[1:])
    p = {"N": rng.choice((1, 1, 2, 4, 8)), "H": _dim(rng, SPATIAL, 7, 128), "CI": ci, "CO": co, **_conv_common(rng)}
    p["W"] = p["H"] if rng.random() < 0.8 else _dim(rng, SPATIAL, 7, 128)
    if groups:
        g = rng.choice([d for d in (2, 4, 8, 16, 32) if ci % d == 0 and co % d == 0] or [1])
        p["groups"] = g
    if dilated:
        p["dilation"] = rng.choice((2, 3, 4))
        p["padding"] = p["dilation"] * (p["kernel_size"] // 2)
    return p


def _sample_conv1d(rng):
    p = {"N": rng.choice((1, 2, 4)), "L": _dim(rng, (64, 128, 256, 512, 1024), 16, 4096),
         "CI": rng.choice(CHANNELS[1:]), "CO": rng.choice(CHANNELS[1:]), **_conv_common(rng)}
    return p


def _sample_conv3d(rng):
    p = {"N": 1, "D": rng.choice((4, 8, 16)), "H": rng.choice((14, 16, 28, 32, 56)), "CI": rng.choice((3, 16, 32, 64)),
         "CO": rng.choice((16, 32, 64, 128)), "kernel_size": rng.choice((1, 3)), "stride": rng.choice((1, 2))}
    p["W"], p["padding"] = p["H"], p["kernel_size"] // 2
    return p


def _sample_depthwise(rng):
    h, k = _dim(rng, SPATIAL, 7, 128), rng.choice((3, 5, 7))
    return {"N": rng.choice((1, 2, 4)), "H": h, "W": h, "C": rng.choice(CHANNELS[1:] + (576, 960)),
            "kernel_size": k, "stride": rng.choice((1, 2)), "padding": k // 2}


def _sample_transposed(rng):
    h = rng.choice((4, 7, 8, 14, 16, 28, 32))
    return {"N": rng.choice((1, 2, 4)), "H": h, "W": h, "CI": rng.choice(CHANNELS[2:]), "CO": rng.choice(CHANNELS[1:]),
            "kernel_size": rng.choice((2, 3, 4)), "stride": rng.choice((1, 2)), "padding": rng.choice((0, 1))}


def _sample_pool(rng):
    h = rng.choice(SPATIAL)
    return {"n": rng.choice((1, 2, 4)), "h": h, "w": h, "c": rng.choice(CHANNELS[1:]), "kernel": rng.choice((2, 3)),
            "stride": rng.choice((1, 2)), "op": rng.choice(("max", "avg"))}


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("matmul", lambda **p: list(_catalogue("matmul")(**p)), _sample_matmul),
    Family("batch_matmul", lambda **p: list(_catalogue("batch_matmul_nkkm")(**p)), _sample_bmm),
    Family("gemv", gemv, _sample_gemv),
    Family("conv1d", lambda **p: list(_catalogue("conv1d_nlc")(**p)), _sample_conv1d),
    Family("conv2d", lambda **p: list(_catalogue("conv2d_nhwc")(**p)), _sample_conv2d),
    Family("conv2d_grouped", lambda **p: list(_catalogue("conv2d_nhwc")(**p)), lambda r: _sample_conv2d(r, groups=True)),
    Family("conv2d_dilated", lambda **p: list(_catalogue("conv2d_nhwc")(**p)), lambda r: _sample_conv2d(r, dilated=True)),
    Family("conv3d", lambda **p: list(_catalogue("conv3d_ndhwc")(**p)), _sample_conv3d),
    Family("depthwise_conv2d", lambda **p: list(_catalogue("depthwise_conv2d_nhwc")(**p)), _sample_depthwise),
    Family("conv2d_transpose", lambda **p: list(_catalogue("conv2d_transpose_nhwc")(**p)), _sample_transposed),
    Family("pool2d", pool2d, _sample_pool),
    Family("softmax", lambda **p: list(_catalogue("softmax_mn")(p["m"], p["n"])),
           lambda r: {"m": _dim(r, TOKENS + HIDDEN, 1, 8192), "n": _dim(r, TOKENS + HIDDEN, 16, 32768)}),
    Family("layer_norm", layer_norm,
           lambda r: {"m": _dim(r, TOKENS, 1, 8192), "n": _dim(r, HIDDEN, 64, 8192), "rms": 0}),
    Family("rms_norm", layer_norm,
           lambda r: {"m": _dim(r, TOKENS, 1, 8192), "n": _dim(r, HIDDEN, 64, 8192), "rms": 1}),
    Family("reduction", reduction,
           lambda r: {"m": _dim(r, TOKENS + HIDDEN, 1, 8192), "n": _dim(r, HIDDEN + FFN, 16, 16384),
                      "axis": r.choice((0, 1)), "op": r.choice(("sum", "max"))}),
    Family("elementwise", elementwise_chain,
           lambda r: {"m": _dim(r, TOKENS, 1, 4096), "n": _dim(r, HIDDEN + FFN, 16, 16384),
                      "ops": "-".join(r.choice(ELEMENTWISE_OPS) for _ in range(r.randint(1, 4)))}),
    Family("matmul_epilogue", matmul_epilogue,
           lambda r: {"m": _dim(r, TOKENS, 1, 2048), "n": _dim(r, HIDDEN + FFN, 64, 8192), "k": _dim(r, HIDDEN, 64, 8192),
                      "epilogue": r.choice(("bias", "bias_relu", "bias_gelu"))}),
    Family("permute", permute,
           lambda r: {"a": _dim(r, (1, 8, 12, 16, 32), 1, 64), "b": _dim(r, TOKENS, 8, 1024), "c": r.choice((32, 64, 96, 128)),
                      "perm": r.choice(("021", "102", "120", "201", "210"))}),
)}
