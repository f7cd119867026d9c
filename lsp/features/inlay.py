"""Inlay hints from a replay: loop extents and created blocks after the names that bind them,
and the decision TVM sampled where the script leaves it open."""

from __future__ import annotations

import json

from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import INST
from dragon_lsp.analysis import Analysis
from dragon_lsp.features.data import Hint, ReplayFacts


def inlay_hints(an: Analysis, facts: ReplayFacts | None, first_line: int = 1, last_line: int = 10**9) -> list[Hint]:
    if facts is None or facts.version != an.version:
        return []
    out: list[Hint] = []
    for stmt in an.statements:
        if stmt.span.end_line < first_line or stmt.span.line > last_line or not isinstance(stmt, ast.CallStmt):
            continue
        found = an.bound.get(id(stmt))
        if found is None:
            continue
        index, inst = found
        for t in stmt.targets:
            info = facts.variables.get(t.id)
            if not info:
                continue
            if "extent" in info:
                out.append(
                    Hint(t.span.end_line, t.span.end_column, f": {info['extent']}", "type", "loop extent after replay")
                )
            elif "block" in info and inst.entry is not INST.get_sblock:
                out.append(Hint(t.span.end_line, t.span.end_column, f": {info['block']}", "type", "block after replay"))
        if inst.entry.decision and "decision" not in inst.args and index in facts.decisions:
            end = stmt.call.span
            label = "decision=" + json.dumps(facts.decisions[index])
            out.append(
                Hint(end.end_line, end.end_column - 1, label, "parameter", "the decision TVM sampled", pad_left=True)
            )
    return out
