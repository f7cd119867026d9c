"""The network zoo: real architectures at their real widths (hidden sizes, heads, vocabularies, channel
counts), cut to one or two layers per repeated stage, since a repeated layer repeats its tasks.

Transformers models are transformers' own classes built from a config (`hf` builder); convolutional
networks are written in torch in `convnets.py` and `vision_blocks.py` (`conv` builder). `NETWORKS`
maps each name to its `Network`; toy networks (tiny dims) serve the tests and are in no full run.
"""

from __future__ import annotations

from dragon_dsl.corpus.networks.registry import Network, Variant

V = Variant

#: causal language models: prefill and decode, three dtypes, int8 and int4 weights
LM_VARIANTS = (
    V("prefill", 1, 128, "fp32"),
    V("prefill", 1, 512, "fp16"),
    V("prefill", 4, 256, "bf16"),
    V("decode", 1, 1023, "fp16"),
    V("decode", 8, 511, "fp16"),
    V("decode", 1, 255, "fp32"),
    V("decode", 1, 1023, "fp16", "int4"),
    V("prefill", 1, 256, "fp16", "int8"),
)
ENCODER_VARIANTS = (
    V("encode", 1, 128, "fp32"),
    V("encode", 8, 512, "fp16"),
    V("encode", 4, 256, "bf16"),
    V("encode", 1, 384, "fp16", "int8"),
)
IMAGE_TRANSFORMER_VARIANTS = (
    V("image", 1),
    V("image", 8, dtype="fp16"),
    V("image", 4, dtype="bf16"),
    V("image", 1, dtype="fp16", quant="int8"),
)
CLIP_VARIANTS = (V("encode", 1, 77, "fp32"), V("encode", 8, 77, "fp16"), V("encode", 4, 77, "bf16"))
SEQ2SEQ_VARIANTS = (
    V("seq2seq", 1, 128, "fp32", decoder=16),
    V("seq2seq", 4, 512, "fp16", decoder=1),
    V("seq2seq", 1, 256, "bf16", decoder=64),
    V("seq2seq", 1, 512, "fp16", "int8", decoder=1),
)
AUDIO_VARIANTS = (
    V("audio", 1, dtype="fp32", decoder=4),
    V("audio", 4, dtype="fp16", decoder=1),
    V("audio", 1, dtype="bf16", decoder=32),
)
CONV_VARIANTS = (
    V("image", 1, image=224),
    V("image", 8, dtype="fp16", image=224),
    V("image", 1, dtype="bf16", image=224),
    V("image", 32, dtype="fp16", image=224),
)
UNET_VARIANTS = (V("image", 1, image=64), V("image", 2, dtype="fp16", image=64), V("image", 1, dtype="bf16", image=96))


def _lm(name, family, config_class, variants=LM_VARIANTS, **args):
    if "n_layer" not in args:  # GPT-2 names its layer count n_layer
        args.setdefault("num_hidden_layers", 1)
    return Network(name, family, "lm", "hf", {"config": config_class, "task": "causal-lm", "args": args}, variants)


def _llama(name, hidden, inter, heads, kv, vocab, **extra):
    return _lm(
        name,
        "llama",
        "LlamaConfig",
        hidden_size=hidden,
        intermediate_size=inter,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        vocab_size=vocab,
        **extra,
    )


def _qwen2(name, hidden, inter, heads, kv, vocab=151936):
    return _lm(
        name,
        "qwen2",
        "Qwen2Config",
        hidden_size=hidden,
        intermediate_size=inter,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        vocab_size=vocab,
    )


def _gpt2(name, embd, heads):
    return _lm(name, "gpt2", "GPT2Config", n_embd=embd, n_head=heads, n_layer=1)


def _hf(name, family, kind, config_class, task, variants, **args):
    return Network(name, family, kind, "hf", {"config": config_class, "task": task, "args": args}, variants)


def _bert(name, family, config_class, hidden, heads, inter, **extra):
    return _hf(
        name,
        family,
        "encoder",
        config_class,
        "encoder",
        ENCODER_VARIANTS,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=inter,
        num_hidden_layers=1,
        **extra,
    )


def _vit(name, hidden, heads, inter, patch=16):
    return _hf(
        name,
        "vit",
        "encoder",
        "ViTConfig",
        "vision",
        IMAGE_TRANSFORMER_VARIANTS,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=inter,
        num_hidden_layers=1,
        patch_size=patch,
    )


def _clip(name, text, vision):
    th, tn, ti = text
    vh, vn, vi, patch = vision
    return _hf(
        name,
        "clip",
        "encoder",
        "CLIPConfig",
        "clip",
        CLIP_VARIANTS,
        text_config={"hidden_size": th, "num_attention_heads": tn, "intermediate_size": ti, "num_hidden_layers": 1},
        vision_config={
            "hidden_size": vh,
            "num_attention_heads": vn,
            "intermediate_size": vi,
            "num_hidden_layers": 1,
            "patch_size": patch,
        },
        projection_dim=min(th, vh),
    )


def _t5(name, d_model, heads, d_ff, gated=False):
    extra = {"feed_forward_proj": "gated-gelu", "tie_word_embeddings": False} if gated else {}
    return _hf(
        name,
        "t5",
        "encoder",
        "T5Config",
        "seq2seq",
        SEQ2SEQ_VARIANTS,
        d_model=d_model,
        num_heads=heads,
        d_ff=d_ff,
        d_kv=d_model // heads,
        num_layers=1,
        num_decoder_layers=1,
        **extra,
    )


def _whisper(name, d_model, heads, ffn):
    return _hf(
        name,
        "whisper",
        "encoder",
        "WhisperConfig",
        "audio",
        AUDIO_VARIANTS,
        d_model=d_model,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn,
        decoder_ffn_dim=ffn,
        encoder_layers=1,
        decoder_layers=1,
    )


def _conv(name, family, function, variants=CONV_VARIANTS, **args):
    return Network(name, family, "conv", "conv", {"function": function, "args": args}, variants)


_ALL = [
    # causal language models
    _llama("llama2-7b", 4096, 11008, 32, 32, 32000),
    _llama("llama2-13b", 5120, 13824, 40, 40, 32000),
    _llama("llama3-8b", 4096, 14336, 32, 8, 128256, rope_theta=500000.0),
    _llama("llama3-70b", 8192, 28672, 64, 8, 128256, rope_theta=500000.0),
    _llama("llama3.2-1b", 2048, 8192, 32, 8, 128256, rope_theta=500000.0, tie_word_embeddings=True),
    _llama("llama3.2-3b", 3072, 8192, 24, 8, 128256, rope_theta=500000.0, tie_word_embeddings=True),
    _llama("tinyllama-1.1b", 2048, 5632, 32, 4, 32000),
    _qwen2("qwen2-0.5b", 896, 4864, 14, 2),
    _qwen2("qwen2-1.5b", 1536, 8960, 12, 2),
    _qwen2("qwen2-7b", 3584, 18944, 28, 4, 152064),
    _qwen2("qwen2.5-3b", 2048, 11008, 16, 2),
    _lm(
        "mistral-7b",
        "mistral",
        "MistralConfig",
        hidden_size=4096,
        intermediate_size=14336,
        num_attention_heads=32,
        num_key_value_heads=8,
        vocab_size=32000,
        sliding_window=4096,
    ),
    _lm(
        "gemma-2b",
        "gemma",
        "GemmaConfig",
        hidden_size=2048,
        intermediate_size=16384,
        num_attention_heads=8,
        num_key_value_heads=1,
        head_dim=256,
        vocab_size=256000,
    ),
    _lm(
        "gemma-7b",
        "gemma",
        "GemmaConfig",
        hidden_size=3072,
        intermediate_size=24576,
        num_attention_heads=16,
        num_key_value_heads=16,
        head_dim=256,
        vocab_size=256000,
    ),
    _lm(
        "gemma2-2b",
        "gemma",
        "Gemma2Config",
        hidden_size=2304,
        intermediate_size=9216,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=256,
        vocab_size=256000,
        num_hidden_layers=2,
    ),
    _lm(
        "phi-2",
        "phi",
        "PhiConfig",
        hidden_size=2560,
        intermediate_size=10240,
        num_attention_heads=32,
        vocab_size=51200,
        partial_rotary_factor=0.4,
    ),
    _lm(
        "phi3-mini",
        "phi",
        "Phi3Config",
        hidden_size=3072,
        intermediate_size=8192,
        num_attention_heads=32,
        num_key_value_heads=32,
        vocab_size=32064,
    ),
    _gpt2("gpt2", 768, 12),
    _gpt2("gpt2-medium", 1024, 16),
    _gpt2("gpt2-large", 1280, 20),
    _gpt2("gpt2-xl", 1600, 25),
    # encoders (text, vision, speech) and encoder-decoders
    _bert("bert-base", "bert", "BertConfig", 768, 12, 3072),
    _bert("bert-large", "bert", "BertConfig", 1024, 16, 4096),
    _bert("roberta-base", "bert", "RobertaConfig", 768, 12, 3072, vocab_size=50265, max_position_embeddings=514),
    _vit("vit-base-16", 768, 12, 3072),
    _vit("vit-large-16", 1024, 16, 4096),
    _vit("deit-small-16", 384, 6, 1536),
    _clip("clip-vit-b32", (512, 8, 2048), (768, 12, 3072, 32)),
    _clip("clip-vit-l14", (768, 12, 3072), (1024, 16, 4096, 14)),
    _t5("t5-small", 512, 8, 2048),
    _t5("t5-base", 768, 12, 3072),
    _t5("flan-t5-base", 768, 12, 2048, gated=True),
    _whisper("whisper-tiny", 384, 6, 1536),
    _whisper("whisper-base", 512, 8, 2048),
    _whisper("whisper-small", 768, 12, 3072),
    # convolutional networks
    _conv("resnet18", "resnet", "resnet", block="basic", layers=(2, 2, 2, 2)),
    _conv("resnet50", "resnet", "resnet", block="bottleneck", layers=(2, 2, 2, 2)),
    _conv("wide-resnet50-2", "resnet", "resnet", block="bottleneck", layers=(2, 2, 2, 2), width=128),
    _conv("resnext50-32x4d", "resnet", "resnet", block="bottleneck", layers=(2, 2, 2, 2), groups=32, width=4),
    _conv("vgg16", "vgg", "vgg", stages=(64, 128, 256, 512, 512)),
    _conv("mobilenet-v2", "mobilenet", "mobilenet_v2"),
    _conv("mobilenet-v3-large", "mobilenet", "mobilenet_v3", size="large"),
    _conv("mobilenet-v3-small", "mobilenet", "mobilenet_v3", size="small"),
    _conv("efficientnet-b0", "efficientnet", "efficientnet", width=1.0, depth=1.0),
    _conv(
        "efficientnet-b4",
        "efficientnet",
        "efficientnet",
        width=1.4,
        depth=1.0,
        variants=(
            V("image", 1, image=380),
            V("image", 8, dtype="fp16", image=380),
            V("image", 1, dtype="bf16", image=380),
        ),
    ),
    _conv("convnext-tiny", "convnext", "convnext", dims=(96, 192, 384, 768)),
    _conv("convnext-base", "convnext", "convnext", dims=(128, 256, 512, 1024)),
    _conv("unet-sd", "unet", "unet_sd", channels=(320, 640, 1280), variants=UNET_VARIANTS),
    _conv(
        "unet-2d",
        "unet",
        "unet_2d",
        channels=(64, 128, 256, 512, 1024),
        variants=(
            V("image", 1, image=256),
            V("image", 4, dtype="fp16", image=256),
            V("image", 1, dtype="bf16", image=128),
        ),
    ),
    # toy networks: the tests' (tiny dims, fp32)
    Network(
        "toy-llama",
        "llama",
        "lm",
        "hf",
        {
            "config": "LlamaConfig",
            "task": "causal-lm",
            "args": {
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "vocab_size": 256,
                "num_hidden_layers": 1,
            },
        },
        (V("prefill", 1, 16), V("decode", 1, 15)),
        toy=True,
    ),
    Network(
        "toy-convnet",
        "resnet",
        "conv",
        "conv",
        {"function": "resnet", "args": {"block": "basic", "layers": (1, 1), "stem": 8}},
        (V("image", 1, image=32),),
        toy=True,
    ),
]

NETWORKS: dict = {n.name: n for n in _ALL}
assert len(NETWORKS) == len(_ALL), "network names are distinct"


def full_run() -> list:
    """The networks a full extraction runs: every one but the toys, kinds taken in turn (a language
    model, an encoder, a conv net, ...), so that a run stopped early has met every kind."""
    by_kind = [[n for n in _ALL if n.kind == kind and not n.toy] for kind in ("lm", "encoder", "conv")]
    order = []
    for i in range(max(len(group) for group in by_kind)):
        order += [group[i] for group in by_kind if i < len(group)]
    return order
