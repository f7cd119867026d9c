"""Trace equality as the codec promises it: everything equal as plain JSON with types
(1 is not True, 1 is not 1.0, NaN equals NaN), and index maps (JSON-graph strings)
equal as maps: the graphs' TVM version and source spans do not count (index_map.py
drops them, so a trace re-encoded from its script has none). No TVM import."""

from __future__ import annotations

import math

from dragon_dsl.language.codec import index_map as imap


def is_graph(x) -> bool:
    return isinstance(x, str) and x.startswith("{") and '"root_index"' in x


def traces_equal(a, b, path="trace") -> list:
    """Differences between two traces (empty when equal)."""
    if is_graph(a) and is_graph(b):
        try:
            same = imap.from_graph(a) == imap.from_graph(b)
        except imap.IndexMapError as exc:
            return [f"{path}: {exc}"]
        return [] if same else [f"{path}: index maps differ"]
    if type(a) is not type(b):
        return [f"{path}: {a!r} ({type(a).__name__}) != {b!r} ({type(b).__name__})"]
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += traces_equal(x, y, f"{path}[{i}]")
        return out
    if isinstance(a, dict):
        if list(a) != list(b):
            return [f"{path}: keys {list(a)} != {list(b)}"]
        out = []
        for k in a:
            out += traces_equal(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return []
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]
