"""Today's operator families (attention, rotary, gated MLP, norms, softmax, linear layers with
epilogues, quantized linears, typed convolutions and pooling), each in fp16 and fp32 with shapes
from real models. `families` puts these together with the classic set and re-exports every name here.
"""

from __future__ import annotations

from dragon_dsl.corpus.families_classic import Family, _sample_pool
from dragon_dsl.tvm import operators as op

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
