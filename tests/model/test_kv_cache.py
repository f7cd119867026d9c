"""The decoder's appending KV cache layers (`kv_cache.growing`) hold what transformers' concatenating
ones hold, through growth past their buffers and the crops of rejected statements."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
cache_utils = pytest.importorskip("transformers.cache_utils")


# (tokens appended, or a negative count cropped), in order: a prompt, single tokens past the first
# buffer's 64 places, a rejected statement's crop, more tokens, a crop back into the first buffer
STEPS = [20] + [1] * 60 + [-7] + [1] * 40 + [3, -50, 1, 1]


def test_appending_layers_hold_what_concatenating_ones_hold():
    from dragon_model.kv_cache import growing as _growing

    class Holder:  # a cache as the model returns it: a list of layers
        def __init__(self):
            self.layers = [cache_utils.DynamicLayer()]

    plain, growing = cache_utils.DynamicLayer(), _growing(Holder()).layers[0]
    assert type(growing).__name__ == "AppendingLayer" and isinstance(growing, cache_utils.DynamicLayer)
    gen = torch.Generator().manual_seed(0)
    for step in STEPS:
        if step < 0:
            plain.crop(step)
            growing.crop(step)
            continue
        k, v = torch.randn(1, 2, step, 8, generator=gen), torch.randn(1, 2, step, 8, generator=gen)
        want = plain.update(k, v)
        got = growing.update(k, v)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        assert growing.get_seq_length() == plain.get_seq_length()
    assert growing._key_buffer.shape[-2] >= growing.get_seq_length()  # it appended in place


def test_other_caches_are_left_as_they_are():
    from dragon_model.kv_cache import growing as _growing

    class Other:
        layers = [object()]

    other = Other()
    assert _growing(other) is other and type(other.layers[0]) is object
    assert _growing(None) is None
