"""Typed values of a checked script: what an argument means, independent of JSON."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Ref:
    """A reference to a random variable bound by an earlier instruction."""

    name: str
    kind: str  # "block", "loop" or "value"


@dataclass(frozen=True)
class Buffer:
    """`read(i)` / `write(i)`: the i-th read or write buffer of a block."""

    side: str  # "read" or "write"
    index: int

    @property
    def bit(self) -> int:  # TVM's buffer_index_type: 0 = read, 1 = write
        return 0 if self.side == "read" else 1
