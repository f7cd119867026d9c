"""Timing policy and speed-up arithmetic.

`flush_bytes` sizes the buffer TVM's time_evaluator copies before each repeat when
an L2 (or last-level cache) flush is asked for: twice the cache, so nothing of the
kernel's data survives. For GPU targets the cache size is the target's
`l2_cache_size_bytes` (50 MiB for the H100 tag; the H200 has 60 MiB, which twice
50 MiB still covers); for CPUs the largest cache sysfs reports (64 MiB if unknown).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

INT_MAX = 2**31 - 1  # time_evaluator takes cache_flush_bytes as a C int


def cpu_cache_bytes() -> int:
    best = 0
    for size_file in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = size_file.read_text().strip().upper()
        try:
            value = int(text.rstrip("KMG"))
        except ValueError:
            continue
        value *= {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        best = max(best, value)
    return best or 64 << 20


def flush_bytes(target_attrs: dict, is_gpu: bool) -> int:
    cache = int(target_attrs.get("l2_cache_size_bytes", 0) or 0) if is_gpu else cpu_cache_bytes()
    if cache <= 0:
        cache = 64 << 20
    return min(2 * cache, INT_MAX)


def median(values: Iterable[float]) -> float | None:
    data = sorted(values)
    if not data:
        return None
    mid = len(data) // 2
    return data[mid] if len(data) % 2 else 0.5 * (data[mid - 1] + data[mid])


def speedup(baseline, candidate) -> float | None:
    """How many times faster `candidate` is than `baseline` (Results or latencies in us)."""
    base = getattr(baseline, "latency_us", baseline)
    cand = getattr(candidate, "latency_us", candidate)
    if not base or not cand:
        return None
    return float(base) / float(cand)


def geomean(values: Iterable[float]) -> float | None:
    data = [v for v in values if v and v > 0]
    if not data:
        return None
    return math.exp(sum(math.log(v) for v in data) / len(data))


def best(results) -> object | None:
    """The fastest successful result of a list, or None."""
    timed = [r for r in results if r.ok and r.latency_us is not None]
    return min(timed, key=lambda r: r.latency_us) if timed else None
