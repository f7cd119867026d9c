"""Operator families: how to build each workload (TVM te) and which shapes to draw.

A family has a builder `build(**params) -> list of te tensors` and a sampler that
draws parameters, half of the time from shapes of real model layers (LLaMA, BERT,
ResNet, MobileNet, ViT...) and otherwise from ranges. Families that MetaSchedule's
te_workload catalogue already defines use it; the others are written here.
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


# ---- operators of today's models: each in fp16 and fp32, shapes from real models ---------------
# LLaMA / Mistral / Qwen / GPT-2 / BERT / ViT dimensions
HEADS = (8, 12, 16, 32, 40)
HEAD_DIM = (64, 128)
SEQ = (128, 256, 512, 1024, 2048)
KV_CACHE = (256, 512, 1024, 2048, 4096, 8192)
LLM_HIDDEN = (768, 1024, 2048, 2560, 3072, 4096, 5120)
LLM_FFN = (2048, 3072, 8192, 11008, 13824, 14336)
VOCAB = (32000, 32064, 50257, 128256, 151936)
DECODE_TOKENS = (1, 2, 4, 8, 16)
PREFILL_TOKENS = (32, 64, 128, 256, 512, 1024, 2048)
CNN_CHANNELS = (16, 24, 32, 64, 96, 128, 144, 192, 256, 384, 512)


def _float(rng) -> str:
    return "float16" if rng.random() < 0.5 else "float32"


def _tokens(rng) -> int:
    return rng.choice(DECODE_TOKENS if rng.random() < 0.4 else PREFILL_TOKENS)


def _sample_attention(rng, decode: bool) -> dict:
    kv = rng.choice(KV_CACHE if decode else SEQ)
    p = {
        "heads": rng.choice(HEADS),
        "q_len": 1 if decode else kv,
        "kv_len": kv,
        "head_dim": rng.choice(HEAD_DIM),
        "dtype": _float(rng),
    }
    return _maybe_fp16_acc(rng, p)


def _maybe_fp16_acc(rng, p: dict) -> dict:
    """Half of the fp16 GEMM-like workloads accumulate in fp16: TVM's fp16 tensor-core intrinsics
    cover those without a cast stage (with fp32 accumulation and a cast, its tensor-core space
    rarely compiles)."""
    if p["dtype"] == "float16" and rng.random() < 0.5:
        p["acc"] = "float16"
    return p


def _sample_linear(rng, m=None, n=None, k=None, epilogues=("none", "none", "bias", "residual", "silu", "gelu")):
    dtype = rng.choice(("float16", "float16", "bfloat16", "float32"))
    k = k or rng.choice(LLM_HIDDEN + LLM_FFN)
    n = n or rng.choice(LLM_HIDDEN + LLM_FFN)
    return _maybe_fp16_acc(
        rng, {"m": m or _tokens(rng), "n": n, "k": k, "dtype": dtype, "epilogue": rng.choice(epilogues)}
    )


def _sample_conv(rng, layout: str) -> dict:
    kind = rng.choice(("1x1", "3x3", "3x3s2", "depthwise", "depthwise_s2"))
    h = rng.choice((7, 14, 28, 56, 112))
    ci = rng.choice(CNN_CHANNELS)
    return {
        "n": rng.choice((1, 1, 2, 8)),
        "h": h,
        "w": h,
        "ci": ci,
        "co": ci if kind.startswith("depthwise") else rng.choice(CNN_CHANNELS),
        "kernel": 1 if kind == "1x1" else 3,
        "stride": 2 if kind.endswith("s2") else 1,
        "layout": layout,
        "depthwise": int(kind.startswith("depthwise")),
        "dtype": _float(rng),
    }


def _sample_causal(rng) -> dict:
    s = rng.choice(SEQ)
    return {"rows": s, "cols": s, "kind": "causal", "dtype": _float(rng)}


def _sample_dequant(rng) -> dict:
    k = rng.choice(LLM_HIDDEN + LLM_FFN)
    return {
        "m": rng.choice(DECODE_TOKENS + (32, 128)),
        "n": rng.choice(LLM_HIDDEN + LLM_FFN),
        "k": k,
        "dtype": "float16",
        "group": rng.choice((128, k)),
    }


def _sample_global_pool(rng) -> dict:
    h = rng.choice((7, 7, 14, 28, 56))
    return {
        "n": rng.choice((1, 1, 2, 8, 32)),
        "c": rng.choice(CNN_CHANNELS + (1024, 1280, 2048)),
        "h": h,
        "w": h,
        "layout": rng.choice(("NCHW", "NHWC")),
        "dtype": _float(rng),
    }


OPERATOR_FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("attention_scores_prefill", op.attention_scores, lambda r: _sample_attention(r, False)),
        Family("attention_scores_decode", op.attention_scores, lambda r: _sample_attention(r, True)),
        Family("attention_values_prefill", op.attention_values, lambda r: _sample_attention(r, False)),
        Family("attention_values_decode", op.attention_values, lambda r: _sample_attention(r, True)),
        Family(
            "rotary",
            op.rotary,
            lambda r: {
                "tokens": _tokens(r),
                "heads": r.choice(HEADS),
                "head_dim": r.choice(HEAD_DIM),
                "dtype": _float(r),
            },
        ),
        Family(
            "gated_mlp",
            op.gated_mlp,
            lambda r: {
                "tokens": _tokens(r),
                "ffn": r.choice(LLM_FFN),
                "act": r.choice(("silu", "silu", "gelu")),
                "dtype": _float(r),
            },
        ),
        Family(
            "rms_norm_llm",
            op.layer_norm,
            lambda r: {"m": _tokens(r), "n": r.choice(LLM_HIDDEN), "rms": 1, "dtype": _float(r)},
        ),
        Family(
            "layer_norm_llm",
            op.layer_norm,
            lambda r: {
                "m": r.choice(DECODE_TOKENS + PREFILL_TOKENS + (197, 577)),
                "n": r.choice(LLM_HIDDEN),
                "rms": 0,
                "dtype": _float(r),
            },
        ),
        Family("softmax_causal", op.softmax, _sample_causal),
        Family(
            "softmax_attention",
            op.softmax,
            lambda r: {
                "rows": r.choice(HEADS) * r.choice((1, 4)),
                "cols": r.choice(KV_CACHE),
                "kind": "plain",
                "dtype": _float(r),
            },
        ),
        Family(
            "log_softmax_vocab",
            op.softmax,
            lambda r: {
                "rows": r.choice(DECODE_TOKENS + (32, 128)),
                "cols": r.choice(VOCAB),
                "kind": "log",
                "dtype": _float(r),
            },
        ),
        Family("linear", op.linear, _sample_linear),
        Family(
            "gemv_decode", op.linear, lambda r: _sample_linear(r, m=1, epilogues=("none", "none", "residual", "silu"))
        ),
        Family(
            "lm_head",
            op.linear,
            lambda r: {
                **_sample_linear(r, n=r.choice(VOCAB), k=r.choice(LLM_HIDDEN)),
                "m": r.choice(DECODE_TOKENS),
                "epilogue": "none",
            },
        ),
        Family(
            "int8_linear",
            op.int8_linear,
            lambda r: {
                "m": _tokens(r),
                "n": r.choice(LLM_HIDDEN + LLM_FFN),
                "k": r.choice(LLM_HIDDEN + LLM_FFN),
                "out_dtype": _float(r),
            },
        ),
        Family("dequant_linear", op.dequant_linear, _sample_dequant),
        Family("conv2d_nchw", op.conv2d, lambda r: _sample_conv(r, "NCHW")),
        Family("conv2d_nhwc", op.conv2d, lambda r: _sample_conv(r, "NHWC")),
        Family(
            "pool2d_typed",
            op.pool2d,
            lambda r: {**_sample_pool(r), "dtype": _float(r), "layout": r.choice(("NCHW", "NHWC"))},
        ),
        Family(
            "permute_typed",
            op.permute,
            lambda r: {
                "a": r.choice((1, 8, 12, 16, 32)),
                "b": r.choice(SEQ + (1, 16)),
                "c": r.choice((64, 128)),
                "perm": r.choice(("102", "021", "210")),
                "dtype": _float(r),
            },
        ),
        # reductions of today's models besides the norms and softmaxes: a CNN head's global pooling, a
        # sentence embedding's mean over tokens, a loss's logsumexp over the vocabulary
        Family("global_avg_pool", op.global_avg_pool, lambda r: _sample_global_pool(r)),
        Family(
            "mean_pool_tokens",
            op.mean_pool_tokens,
            lambda r: {
                "batch": r.choice((1, 2, 4, 8, 16, 32)),
                "tokens": r.choice((16, 32, 64) + SEQ[:3]),
                "hidden": r.choice((384,) + LLM_HIDDEN[:4]),
                "dtype": _float(r),
            },
        ),
        Family(
            "logsumexp",
            op.logsumexp,
            lambda r: {
                "rows": r.choice(DECODE_TOKENS + (32, 128, 512)),
                "cols": r.choice(VOCAB + LLM_HIDDEN[:3]),
                "dtype": _float(r),
            },
        ),
        # single-block reductions of training and quantised inference: a per-token absmax (the scale of
        # dynamic int8/fp8 quantisation), a row's squared L2 norm, a bias gradient (a column sum)
        Family(
            "row_absmax",
            op.row_absmax,
            lambda r: {"rows": _tokens(r), "cols": r.choice(LLM_HIDDEN + LLM_FFN[:3]), "dtype": _float(r)},
        ),
        Family(
            "sum_of_squares",
            op.sum_of_squares,
            lambda r: {
                "rows": r.choice(DECODE_TOKENS + PREFILL_TOKENS),
                "cols": r.choice(LLM_HIDDEN + VOCAB[:2]),
                "dtype": _float(r),
            },
        ),
        Family(
            "bias_grad",
            op.bias_grad,
            lambda r: {
                "tokens": r.choice(PREFILL_TOKENS + (4096, 8192)),
                "features": r.choice(LLM_HIDDEN + LLM_FFN[:4]),
                "dtype": _float(r),
            },
        ),
        Family(
            "reduction_typed",
            op.reduction,
            lambda r: {
                "m": _tokens(r) * r.choice((1, 8)),
                "n": r.choice(LLM_HIDDEN + VOCAB[:1]),
                "axis": r.choice((0, 1)),
                "op": r.choice(("sum", "max")),
                "dtype": _float(r),
            },
        ),
    )
}

#: every family the generator knows: the classic set (the default of `generate`) and today's operators
ALL_FAMILIES: dict[str, Family] = {**FAMILIES, **OPERATOR_FAMILIES}


# ---- held-out real operators: no training step may see these workloads -------------------------
def _held(family: str, **params) -> tuple:
    return family, tuple(sorted(params.items()))


HELD_OUT_OPERATORS: tuple = (
    _held("attention_scores_decode", heads=32, q_len=1, kv_len=4096, head_dim=128, dtype="float16"),
    _held("attention_scores_decode", heads=40, q_len=1, kv_len=2048, head_dim=128, dtype="float32"),
    _held("attention_scores_prefill", heads=32, q_len=512, kv_len=512, head_dim=128, dtype="float16"),
    _held("attention_scores_prefill", heads=12, q_len=256, kv_len=256, head_dim=64, dtype="float32"),
    _held("attention_values_decode", heads=32, q_len=1, kv_len=4096, head_dim=128, dtype="float16"),
    _held("attention_values_decode", heads=8, q_len=1, kv_len=8192, head_dim=128, dtype="float32"),
    _held("attention_values_prefill", heads=32, q_len=512, kv_len=512, head_dim=128, dtype="float16"),
    _held("attention_values_prefill", heads=12, q_len=256, kv_len=256, head_dim=64, dtype="float32"),
    _held("rotary", tokens=512, heads=32, head_dim=128, dtype="float16"),
    _held("rotary", tokens=1, heads=32, head_dim=128, dtype="float32"),
    _held("rotary", tokens=2048, heads=8, head_dim=128, dtype="float16"),
    _held("gated_mlp", tokens=128, ffn=11008, act="silu", dtype="float16"),
    _held("gated_mlp", tokens=1, ffn=14336, act="silu", dtype="float32"),
    _held("gated_mlp", tokens=512, ffn=8192, act="gelu", dtype="float16"),
    _held("rms_norm_llm", m=1, n=4096, rms=1, dtype="float16"),
    _held("rms_norm_llm", m=128, n=4096, rms=1, dtype="float16"),
    _held("rms_norm_llm", m=2048, n=5120, rms=1, dtype="float32"),
    _held("layer_norm_llm", m=197, n=768, rms=0, dtype="float32"),
    _held("layer_norm_llm", m=512, n=1024, rms=0, dtype="float16"),
    _held("softmax_causal", rows=512, cols=512, kind="causal", dtype="float16"),
    _held("softmax_causal", rows=1024, cols=1024, kind="causal", dtype="float32"),
    _held("softmax_attention", rows=32, cols=4096, kind="plain", dtype="float16"),
    _held("log_softmax_vocab", rows=1, cols=128256, kind="log", dtype="float32"),
    _held("log_softmax_vocab", rows=8, cols=32000, kind="log", dtype="float16"),
    _held("linear", m=128, n=4096, k=4096, dtype="float16", epilogue="none"),
    _held("linear", m=512, n=4096, k=11008, dtype="float16", epilogue="residual"),
    _held("linear", m=128, n=14336, k=4096, dtype="float16", epilogue="silu"),
    _held("linear", m=256, n=4096, k=4096, dtype="bfloat16", epilogue="none"),
    _held("linear", m=64, n=3072, k=768, dtype="float32", epilogue="bias"),
    _held("linear", m=197, n=3072, k=768, dtype="float32", epilogue="gelu"),
    _held("gemv_decode", m=1, n=11008, k=4096, dtype="float16", epilogue="none"),
    _held("gemv_decode", m=1, n=4096, k=4096, dtype="float32", epilogue="none"),
    _held("lm_head", m=1, n=32000, k=4096, dtype="float16", epilogue="none"),
    _held("lm_head", m=8, n=50257, k=768, dtype="float32", epilogue="none"),
    _held("int8_linear", m=128, n=4096, k=4096, out_dtype="float16"),
    _held("int8_linear", m=16, n=11008, k=4096, out_dtype="float32"),
    _held("dequant_linear", m=1, n=4096, k=4096, dtype="float16", group=128),
    _held("dequant_linear", m=32, n=11008, k=4096, dtype="float16", group=4096),
    _held(
        "conv2d_nchw", n=1, h=56, w=56, ci=64, co=256, kernel=1, stride=1, layout="NCHW", depthwise=0, dtype="float32"
    ),
    _held(
        "conv2d_nchw", n=1, h=28, w=28, ci=128, co=128, kernel=3, stride=1, layout="NCHW", depthwise=0, dtype="float16"
    ),
    _held(
        "conv2d_nchw", n=1, h=56, w=56, ci=144, co=144, kernel=3, stride=2, layout="NCHW", depthwise=1, dtype="float16"
    ),
    _held(
        "conv2d_nhwc", n=1, h=56, w=56, ci=64, co=128, kernel=3, stride=2, layout="NHWC", depthwise=0, dtype="float32"
    ),
    _held(
        "conv2d_nhwc", n=1, h=112, w=112, ci=32, co=32, kernel=3, stride=1, layout="NHWC", depthwise=1, dtype="float32"
    ),
    _held(
        "conv2d_nhwc", n=8, h=14, w=14, ci=256, co=256, kernel=3, stride=1, layout="NHWC", depthwise=0, dtype="float16"
    ),
    _held("pool2d_typed", n=1, h=112, w=112, c=64, kernel=3, stride=2, op="max", dtype="float32", layout="NCHW"),
    _held("pool2d_typed", n=4, h=56, w=56, c=128, kernel=2, stride=2, op="avg", dtype="float16", layout="NHWC"),
    _held("permute_typed", a=32, b=512, c=128, perm="102", dtype="float16"),
    _held("permute_typed", a=12, b=256, c=64, perm="102", dtype="float32"),
    _held("reduction_typed", m=128, n=4096, axis=1, op="sum", dtype="float16"),
    _held("reduction_typed", m=1024, n=4096, axis=0, op="max", dtype="float32"),
)
