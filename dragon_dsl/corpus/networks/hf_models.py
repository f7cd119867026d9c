"""Transformers models of the zoo: a model built from its config on PyTorch's `meta` device (no weight
is allocated), wrapped so that one static call returns one tensor, with example inputs for a variant.

Decode is one new token after `seq` cached ones: the cache (transformers' DynamicCache) is filled from
key and value inputs of the program, so its length is a static shape, not a value.
"""

from __future__ import annotations

from dragon_dsl.corpus.networks.registry import NetworkError


def build(network, variant):
    """(module, example args) of an `hf` network in a variant, both on the meta device."""
    import torch
    import transformers

    spec = network.config
    config_class = getattr(transformers, spec["config"], None)
    if config_class is None:
        raise NetworkError(f"{network.name}: transformers {transformers.__version__} has no {spec['config']}")
    dtype = getattr(torch, variant.torch_dtype)
    config = config_class(**spec["args"])
    task = spec["task"]
    model_class = _MODEL_CLASSES.get(task)
    if model_class is None:
        raise NetworkError(f"{network.name}: unknown task {task!r}")
    with torch.device("meta"):
        cls = getattr(transformers, model_class)
        # the Auto classes build from a config with from_config, the model classes with _from_config
        make = getattr(cls, "from_config", None) or cls._from_config
        model = make(config, dtype=dtype).eval()
        if variant.quant:
            from dragon_dsl.corpus.networks.quant import quantize_linears

            quantize_linears(model, 4 if variant.quant == "int4" else 8, dtype)
        return _wrapped(task, model, variant, dtype)


_MODEL_CLASSES = {
    "causal-lm": "AutoModelForCausalLM",
    "encoder": "AutoModel",
    "vision": "AutoModel",
    "clip": "CLIPModel",
    "seq2seq": "T5ForConditionalGeneration",
    "audio": "WhisperForConditionalGeneration",
}


def _wrapped(task, model, variant, dtype):
    import torch

    b, s = variant.batch, variant.seq
    ids = torch.zeros((b, s), dtype=torch.long)
    if task == "causal-lm":
        if variant.mode == "decode":
            kv = _cache_shape(model.config, b, s)
            cache = torch.zeros(kv, dtype=dtype)
            return _call(model, "decode"), (torch.zeros((b, 1), dtype=torch.long), cache, cache.clone())
        return _call(model, "logits"), (ids,)
    if task == "encoder":
        return _call(model, "hidden"), (ids,)
    if task == "vision":
        side = variant.image or model.config.image_size
        return _call(model, "pixels"), (torch.zeros((b, model.config.num_channels, side, side), dtype=dtype),)
    if task == "clip":
        side = model.config.vision_config.image_size
        return _call(model, "clip"), (ids, torch.zeros((b, 3, side, side), dtype=dtype))
    decoder_ids = torch.zeros((b, variant.decoder), dtype=torch.long)
    if task == "seq2seq":
        return _call(model, "seq2seq"), (ids, decoder_ids)
    frames = 2 * model.config.max_source_positions
    return _call(model, "audio"), (torch.zeros((b, model.config.num_mel_bins, frames), dtype=dtype), decoder_ids)


def _cache_shape(config, batch, length) -> tuple:
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return (batch, heads, length, head_dim)


def _call_class():
    import torch

    class Call(torch.nn.Module):
        """One forward of a transformers model, by kind, returning one tensor."""

        def __init__(self, model, how):
            super().__init__()
            self.model, self.how = model, how

        def forward(self, *args):
            m, how = self.model, self.how
            if how == "logits":
                return m(input_ids=args[0], use_cache=False).logits
            if how == "decode":
                return m(
                    input_ids=args[0], past_key_values=_filled_cache(m.config, args[1], args[2]), use_cache=True
                ).logits
            if how == "hidden":
                return m(input_ids=args[0]).last_hidden_state
            if how == "pixels":
                return m(pixel_values=args[0]).last_hidden_state
            if how == "clip":
                return m(input_ids=args[0], pixel_values=args[1]).logits_per_image
            if how == "seq2seq":
                return m(input_ids=args[0], decoder_input_ids=args[1], use_cache=False).logits
            return m(input_features=args[0], decoder_input_ids=args[1], use_cache=False).logits

    return Call


def _call(model, how):
    return _call_class()(model, how)


def _filled_cache(config, keys, values):
    """A DynamicCache whose every layer already holds KEYS and VALUES (a static context length)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=config)
    for layer in cache.layers:
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
    return cache
