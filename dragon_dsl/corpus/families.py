"""Operator families: how to build each workload (TVM te) and which shapes to draw.

A family has a builder `build(**params) -> list of te tensors` and a sampler that
draws parameters, half of the time from shapes of real model layers (LLaMA, BERT,
ResNet, MobileNet, ViT...) and otherwise from ranges. Families that MetaSchedule's
te_workload catalogue already defines use it; the others are written in
families_classic (with the family record) and families_operators (today's operators), and
this module puts them together (`ALL_FAMILIES`), names the held-out operators and
re-exports every name of both.
"""

from __future__ import annotations

from dragon_dsl.corpus.families_classic import (  # noqa: F401  (importable here as before the split)
    CHANNELS,
    ELEMENTWISE_OPS,
    FAMILIES,
    FFN,
    HIDDEN,
    SPATIAL,
    TOKENS,
    Family,
)
from dragon_dsl.corpus.families_operators import (  # noqa: F401  (importable here as before the split)
    CNN_CHANNELS,
    DECODE_TOKENS,
    HEAD_DIM,
    HEADS,
    KV_CACHE,
    LLM_FFN,
    LLM_HIDDEN,
    OPERATOR_FAMILIES,
    PREFILL_TOKENS,
    SEQ,
    VOCAB,
)

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
