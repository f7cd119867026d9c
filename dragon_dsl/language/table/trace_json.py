"""Positions in trace JSON: the one reader of an instruction's `[kind, inputs, attrs, outputs]`
outside the codec, by the table's slots.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dragon_dsl.language.table.instructions import BY_KIND
from dragon_dsl.language.table.schema import Instruction

#: One instruction of trace JSON: [ /* 0 */ kind, /* 1 */ inputs, /* 2 */ attrs, /* 3 */ outputs ].
JSON_KIND, JSON_INPUTS, JSON_ATTRS, JSON_OUTPUTS = 0, 1, 2, 3


@dataclass(frozen=True)
class TraceRow:
    """One instruction of trace JSON read by the table: the only reader of JSON positions outside
    the codec. `entry` is None for a kind the table does not know."""

    entry: Instruction | None
    kind: str
    inputs: list
    attrs: list
    outputs: list

    def arg(self, name: str, default: Any = None) -> Any:
        """The raw JSON of parameter `name` (a flattened rest parameter: the list from its slot on)."""
        p = self.entry.param(name) if self.entry is not None else None
        if p is None or p.slot.section == "decision":
            return default
        values = self.inputs if p.slot.section == "inputs" else self.attrs
        idx = p.slot.index
        if isinstance(idx, tuple):
            return [values[i] for i in idx] if max(idx) < len(values) else default
        if p.slot.rest:
            return list(values[idx:])
        return values[idx] if idx < len(values) else default


def trace_row(js: list) -> TraceRow:
    """Read one instruction of trace JSON (`[kind, inputs, attrs, outputs]`)."""
    kind = js[JSON_KIND]
    return TraceRow(BY_KIND.get(kind), kind, list(js[JSON_INPUTS]), list(js[JSON_ATTRS]), list(js[JSON_OUTPUTS]))
