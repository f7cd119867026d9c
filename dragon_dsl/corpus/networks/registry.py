"""The network zoo's records: what a network is (family, kind, how it is built, its configuration) and
the variants it is exported in (mode, batch, sequence or context length, dtype, weight quantisation).

No torch here: `--list`, the split manifest and the tests read the zoo without building a model.
The zoo's entries themselves are in `zoo.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: kinds of network; the split manifest spreads each over train, validation and test
KINDS = ("lm", "encoder", "conv")
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
QUANTS = ("", "int8", "int4")
MODES = ("prefill", "decode", "encode", "image", "seq2seq", "audio")


class NetworkError(ValueError):
    """A network or variant the zoo does not have, or one defined wrongly."""


@dataclass(frozen=True)
class Variant:
    """One static-shape export of a network.

    mode: prefill (tokens, no cache), decode (one token after `seq` cached ones), encode (tokens through
    an encoder), image (pixels), seq2seq (encoder tokens and `decoder` decoder tokens), audio (log-mel
    frames and `decoder` decoder tokens). `image` is the side of a square image (0: the config's)."""

    mode: str
    batch: int
    seq: int = 0
    dtype: str = "fp32"
    quant: str = ""
    image: int = 0
    decoder: int = 0

    def __post_init__(self):
        if self.mode not in MODES or self.dtype not in DTYPES or self.quant not in QUANTS or self.batch < 1:
            raise NetworkError(f"bad variant {self}")

    @property
    def name(self) -> str:
        parts = [self.mode, f"b{self.batch}"]
        if self.seq:
            parts.append(f"{'c' if self.mode == 'decode' else 's'}{self.seq}")
        if self.decoder:
            parts.append(f"d{self.decoder}")
        if self.image:
            parts.append(f"i{self.image}")
        parts.append(self.dtype)
        if self.quant:
            parts.append(self.quant)
        return "-".join(parts)

    @property
    def torch_dtype(self) -> str:
        return DTYPES[self.dtype]


@dataclass(frozen=True)
class Network:
    """A network of the zoo: `builder` names how it is made ("hf": a transformers config class and a
    model class; "conv": a function of `convnets`/`vision_blocks`), `config` its arguments."""

    name: str
    family: str
    kind: str
    builder: str
    config: dict = field(default_factory=dict, hash=False, compare=False)
    variants: tuple = ()
    toy: bool = False  # a tiny network for tests: in no full run and no split

    def __post_init__(self):
        if self.kind not in KINDS:
            raise NetworkError(f"{self.name}: kind {self.kind!r} is none of {', '.join(KINDS)}")
        names = [v.name for v in self.variants]
        if not names or len(set(names)) != len(names):
            raise NetworkError(f"{self.name}: variants must be given and distinct: {names}")

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise NetworkError(f"{self.name} has no variant {name!r}; it has: {', '.join(v.name for v in self.variants)}")


def lookup(networks: dict, names) -> list:
    """The networks NAMES names, in that order; an unknown name is an error listing the known ones
    (and the closest match)."""
    import difflib

    unknown = [n for n in names if n not in networks]
    if unknown:
        hints = []
        for n in unknown:
            close = difflib.get_close_matches(n, list(networks), n=1)
            hints.append(f"{n!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise NetworkError(f"unknown network {', '.join(hints)}; known: {', '.join(sorted(networks))}")
    return [networks[n] for n in names]
