"""The family record and the classic operator families (matmul, convolutions, pooling, norms,
elementwise...): how to build each workload (TVM te) and which shapes to draw.

Families that MetaSchedule's te_workload catalogue already defines use it. `families` puts these
together with today's operators (`families_operators`) and re-exports every name here.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from dragon_dsl.tvm import operators as op

# Dimensions seen in real layers: hidden sizes, FFN sizes, sequence lengths, channels.
HIDDEN = (256, 512, 768, 1024, 2048, 2560, 3072, 4096, 5120)
FFN = (1024, 2048, 3072, 4096, 8192, 11008, 13824)
TOKENS = (1, 16, 32, 64, 128, 256, 512, 1024, 2048)
CHANNELS = (3, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
SPATIAL = (7, 14, 16, 28, 32, 56, 64, 112)
ELEMENTWISE_OPS = ("add", "mul", "sub", "max", "relu", "sigmoid", "exp", "tanh")


def _dim(rng: random.Random, real: tuple, lo: int, hi: int) -> int:
    return rng.choice(real) if rng.random() < 0.5 else rng.randint(lo, hi)


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
    return {
        "n": _dim(rng, TOKENS, 1, 4096),
        "m": _dim(rng, HIDDEN + FFN, 16, 8192),
        "k": _dim(rng, HIDDEN + FFN, 16, 8192),
        "in_dtype": i,
        "out_dtype": o,
    }


def _sample_bmm(rng):
    i, o = _mm_dtypes(rng)
    return {
        "B": rng.choice((1, 2, 4, 8, 12, 16, 32)),
        "N": _dim(rng, TOKENS, 8, 1024),
        "M": _dim(rng, TOKENS + (64, 128), 8, 1024),
        "K": rng.choice((32, 64, 80, 96, 128, 256)),
        "in_dtype": i,
        "out_dtype": o,
    }


def _sample_gemv(rng):
    i, o = _mm_dtypes(rng)
    return {
        "m": _dim(rng, HIDDEN + FFN, 64, 16384),
        "k": _dim(rng, HIDDEN + FFN, 64, 16384),
        "in_dtype": i,
        "out_dtype": o,
    }


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
    p = {
        "N": rng.choice((1, 2, 4)),
        "L": _dim(rng, (64, 128, 256, 512, 1024), 16, 4096),
        "CI": rng.choice(CHANNELS[1:]),
        "CO": rng.choice(CHANNELS[1:]),
        **_conv_common(rng),
    }
    return p


def _sample_conv3d(rng):
    p = {
        "N": 1,
        "D": rng.choice((4, 8, 16)),
        "H": rng.choice((14, 16, 28, 32, 56)),
        "CI": rng.choice((3, 16, 32, 64)),
        "CO": rng.choice((16, 32, 64, 128)),
        "kernel_size": rng.choice((1, 3)),
        "stride": rng.choice((1, 2)),
    }
    p["W"], p["padding"] = p["H"], p["kernel_size"] // 2
    return p


def _sample_depthwise(rng):
    h, k = _dim(rng, SPATIAL, 7, 128), rng.choice((3, 5, 7))
    return {
        "N": rng.choice((1, 2, 4)),
        "H": h,
        "W": h,
        "C": rng.choice(CHANNELS[1:] + (576, 960)),
        "kernel_size": k,
        "stride": rng.choice((1, 2)),
        "padding": k // 2,
    }


def _sample_transposed(rng):
    h = rng.choice((4, 7, 8, 14, 16, 28, 32))
    return {
        "N": rng.choice((1, 2, 4)),
        "H": h,
        "W": h,
        "CI": rng.choice(CHANNELS[2:]),
        "CO": rng.choice(CHANNELS[1:]),
        "kernel_size": rng.choice((2, 3, 4)),
        "stride": rng.choice((1, 2)),
        "padding": rng.choice((0, 1)),
    }


def _sample_pool(rng):
    h = rng.choice(SPATIAL)
    return {
        "n": rng.choice((1, 2, 4)),
        "h": h,
        "w": h,
        "c": rng.choice(CHANNELS[1:]),
        "kernel": rng.choice((2, 3)),
        "stride": rng.choice((1, 2)),
        "op": rng.choice(("max", "avg")),
    }


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("matmul", lambda **p: list(op.catalogue("matmul")(**p)), _sample_matmul),
        Family("batch_matmul", lambda **p: list(op.catalogue("batch_matmul_nkkm")(**p)), _sample_bmm),
        Family("gemv", op.gemv, _sample_gemv),
        Family("conv1d", lambda **p: list(op.catalogue("conv1d_nlc")(**p)), _sample_conv1d),
        Family("conv2d", lambda **p: list(op.catalogue("conv2d_nhwc")(**p)), _sample_conv2d),
        Family(
            "conv2d_grouped",
            lambda **p: list(op.catalogue("conv2d_nhwc")(**p)),
            lambda r: _sample_conv2d(r, groups=True),
        ),
        Family(
            "conv2d_dilated",
            lambda **p: list(op.catalogue("conv2d_nhwc")(**p)),
            lambda r: _sample_conv2d(r, dilated=True),
        ),
        Family("conv3d", lambda **p: list(op.catalogue("conv3d_ndhwc")(**p)), _sample_conv3d),
        Family("depthwise_conv2d", lambda **p: list(op.catalogue("depthwise_conv2d_nhwc")(**p)), _sample_depthwise),
        Family("conv2d_transpose", lambda **p: list(op.catalogue("conv2d_transpose_nhwc")(**p)), _sample_transposed),
        Family("pool2d", op.pool2d, _sample_pool),
        Family(
            "softmax",
            lambda **p: list(op.catalogue("softmax_mn")(p["m"], p["n"])),
            lambda r: {"m": _dim(r, TOKENS + HIDDEN, 1, 8192), "n": _dim(r, TOKENS + HIDDEN, 16, 32768)},
        ),
        Family(
            "layer_norm",
            op.layer_norm,
            lambda r: {"m": _dim(r, TOKENS, 1, 8192), "n": _dim(r, HIDDEN, 64, 8192), "rms": 0},
        ),
        Family(
            "rms_norm",
            op.layer_norm,
            lambda r: {"m": _dim(r, TOKENS, 1, 8192), "n": _dim(r, HIDDEN, 64, 8192), "rms": 1},
        ),
        Family(
            "reduction",
            op.reduction,
            lambda r: {
                "m": _dim(r, TOKENS + HIDDEN, 1, 8192),
                "n": _dim(r, HIDDEN + FFN, 16, 16384),
                "axis": r.choice((0, 1)),
                "op": r.choice(("sum", "max")),
            },
        ),
        Family(
            "elementwise",
            op.elementwise_chain,
            lambda r: {
                "m": _dim(r, TOKENS, 1, 4096),
                "n": _dim(r, HIDDEN + FFN, 16, 16384),
                "ops": "-".join(r.choice(ELEMENTWISE_OPS) for _ in range(r.randint(1, 4))),
            },
        ),
        Family(
            "matmul_epilogue",
            op.matmul_epilogue,
            lambda r: {
                "m": _dim(r, TOKENS, 1, 2048),
                "n": _dim(r, HIDDEN + FFN, 64, 8192),
                "k": _dim(r, HIDDEN, 64, 8192),
                "epilogue": r.choice(("bias", "bias_relu", "bias_gelu")),
            },
        ),
        Family(
            "permute",
            op.permute,
            lambda r: {
                "a": _dim(r, (1, 8, 12, 16, 32), 1, 64),
                "b": _dim(r, TOKENS, 8, 1024),
                "c": r.choice((32, 64, 96, 128)),
                "perm": r.choice(("021", "102", "120", "201", "210")),
            },
        ),
    )
}
