"""The explanation graph as data: entries, their links and literal data, and stable names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Entry:
    kind: str  # "fact", "rationale" or "effect"
    text: str
    links: dict[str, list[str]] = field(default_factory=dict)  # keyword -> names (or Entry objects, resolved later)
    data: dict[str, Any] = field(default_factory=dict)
    name: str | None = None


def number(x):
    """Literal numbers as the graph writes them: integers stay integers, others get 2 decimals."""
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return x
    if isinstance(x, float):
        if x == int(x) and abs(x) < 2**53:
            return int(x)
        return round(x, 2)
    return x


def fmt(x) -> str:
    """A number in entry texts: thousands kept readable, floats with at most 2 decimals."""
    x = number(x)
    if isinstance(x, float):
        return f"{x:.2f}".rstrip("0").rstrip(".")
    return str(x)


def dims(values) -> str:
    return "x".join(str(v) for v in values)
