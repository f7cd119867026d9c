"""The decoder's KV cache: transformers' growing cache layers made to append in place (`growing`),
and the roll-back of a rejected statement (`crop`). The same keys and values as transformers'
own layers, without a copy of the whole cache per token."""

from __future__ import annotations

from functools import lru_cache


def growing(cache):
    """CACHE with its growing layers appending in place: transformers' DynamicLayer concatenates the
    whole cache with each token's keys and values (a copy per token and layer: 52% of a 69-statement
    CUDA answer's 147 s on a 2-core CPU went to that `torch.cat`). The layers then keep a buffer of
    spare capacity and hand out views of its filled part, the same values the concatenation made;
    `crop` (a rejected statement) still slices them. Caches of other kinds are left as they are."""
    try:
        from transformers.cache_utils import DynamicLayer
    except ImportError:  # transformers without cache layers
        return cache
    for layer in getattr(cache, "layers", None) or []:
        if type(layer) is DynamicLayer:
            layer.__class__ = _appending_layer()
    return cache


@lru_cache(maxsize=1)
def _appending_layer():
    from transformers.cache_utils import DynamicLayer

    class AppendingLayer(DynamicLayer):
        """DynamicLayer whose keys and values are views of buffers that double when full."""

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized or self.keys.numel() == 0:
                return super().update(key_states, value_states, *args, **kwargs)
            self.keys = _append(self, "_key_buffer", self.keys, key_states)
            self.values = _append(self, "_value_buffer", self.values, value_states)
            return self.keys, self.values

    return AppendingLayer


def _append(layer, name: str, filled, new):
    """FILLED (a view of LAYER's buffer NAME, or any tensor) followed by NEW along the sequence, as a
    view of the buffer; a new buffer of twice the length when it is full or FILLED is not its view."""
    n, t = filled.shape[-2], new.shape[-2]
    buffer = getattr(layer, name, None)
    if (
        buffer is None
        or buffer.shape[-2] < n + t
        or filled.data_ptr() != buffer.data_ptr()
        or filled.shape[:-2] != buffer.shape[:-2]
    ):
        shape = list(filled.shape)
        shape[-2] = max(2 * (n + t), 64)
        buffer = filled.new_empty(shape)
        buffer[..., :n, :] = filled
        setattr(layer, name, buffer)
    buffer[..., n : n + t, :] = new
    return buffer[..., : n + t, :]


def crop(cache, length: int) -> None:
    """Drop the cached keys and values after `length` tokens (a rejected statement)."""
    if hasattr(cache, "crop"):
        extra = int(cache.get_seq_length()) - length
        if extra > 0:
            cache.crop(-extra)  # a negative count removes that many tokens (old and new transformers)
        return
    raise TypeError(f"cannot roll back a {type(cache).__name__}")
