"""Signature help: the instruction's signature from the table, with the active parameter."""

from __future__ import annotations

from dragon_dsl.language.table import Instruction
from dragon_lsp.features.context import context_at, entry_of, param_for
from dragon_lsp.features.data import SignatureInfo


def _param_offsets(entry: Instruction) -> list[tuple[int, int]]:
    """Where each parameter sits in `entry.signature()` (found in order, as the table prints them)."""
    label = entry.signature()
    close = label.rfind(")")
    out = []
    pos = label.find("(") + 1
    for p in entry.params:
        start = label.find(p.name + ":", pos)
        if start < 0:
            out.append((0, 0))
            continue
        if start > 0 and label[start - 1] == "*":
            start -= 1
        end = label.find(", ", start)
        end = close if end < 0 or end > close else end
        out.append((start, end))
        pos = end
    return out


def signature_help(lines, line: int, col: int) -> SignatureInfo | None:
    ctx = context_at(lines, line, col)
    if ctx.in_comment:
        return None
    frame = ctx.call
    entry = entry_of(frame)
    if not isinstance(entry, Instruction):
        return None
    offsets = _param_offsets(entry)
    params = [(a, b, p.doc) for (a, b), p in zip(offsets, entry.params)]
    active_param = param_for(entry, frame)
    active = None
    if active_param is not None:
        active = next(i for i, p in enumerate(entry.params) if p.name == active_param.name)
    return SignatureInfo(entry.signature(), entry.doc, params, active)
