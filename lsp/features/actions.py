"""Code actions: quick fixes for common errors (plain edits computed from the checked
program and the diagnostics' data), and the schedule actions the session adds."""

from __future__ import annotations

import json
from collections.abc import Iterable

from dragon_dsl.language.codec.encode import PREFIX
from dragon_dsl.language.diagnostics import Diagnostic, Span
from dragon_dsl.language.syntax import ast
from dragon_lsp.analysis import Analysis
from dragon_lsp.features.data import Action, Edit


def span_text(an: Analysis, span: Span) -> str:
    if span.line != span.end_line or not 0 < span.line <= len(an.lines):
        return ""
    return an.lines[span.line - 1][span.column - 1 : span.end_column - 1]


def overlaps(a: Span, b: Span) -> bool:
    return (a.line, a.column) <= (b.end_line, b.end_column) and (b.line, b.column) <= (a.end_line, a.end_column)


def quick_fixes(an: Analysis, diags: Iterable[Diagnostic]) -> list[Action]:
    out: list[Action] = []
    for d in diags:
        try:
            out += _fixes_for(an, d)
        except (IndexError, KeyError, ValueError, AttributeError, TypeError):
            continue  # a fix is a convenience: a diagnostic we cannot fix gets no action
    return out


def _fixes_for(an: Analysis, d: Diagnostic) -> list[Action]:
    if d.code == "DRG206":
        return _fix_results(an, d)
    if d.code == "DRG104":
        return _fix_unused(an, d)
    if d.code in ("DRG303", "DRG302") and d.suggestion is not None:
        return _fix_decision(an, d)
    out = []
    old = span_text(an, d.span)
    if not old:
        return []
    # the checker puts its "did you mean" word in the diagnostic's suggestion
    candidates = [d.suggestion] if isinstance(d.suggestion, str) else []
    if d.code == "DRG101":  # a use of an undefined name: offer close names defined before it
        candidates += [n for n in an.close_names(old, d.span.line) if n not in candidates]
    for i, new in enumerate(candidates[:3]):
        if new.endswith(":") and not old.endswith(":"):
            new = new[:-1]
        text = json.dumps(new, ensure_ascii=False) if old.startswith('"') else new
        out.append(Action(f"Change {old} to {text}", "quickfix", [Edit(d.span, text)], d, preferred=i == 0))
    return out


def _call_stmt(an: Analysis, span: Span) -> ast.CallStmt | None:
    stmt = an.statement_at(span.line)
    return stmt if isinstance(stmt, ast.CallStmt) else None


def _fresh_names(an: Analysis, kind: str, count: int) -> list[str]:
    prefix = PREFIX.get(kind, "x")
    used = set(an.occurrences) | set(an.program.definitions)
    nums = [int(n[len(prefix) :]) for n in used if n.startswith(prefix) and n[len(prefix) :].isdigit()]
    k = max(nums, default=-1) + 1
    out = []
    while len(out) < count:
        name = f"{prefix}{k}"
        if name not in used:
            out.append(name)
        k += 1
    return out


def _fix_results(an: Analysis, d: Diagnostic) -> list[Action]:
    stmt = _call_stmt(an, d.span)
    found = an.bound.get(id(stmt)) if stmt is not None else None
    if found is None:
        return []
    inst = found[1]
    want = inst.entry.results.expected(inst.args)
    if not isinstance(want, int):
        return []
    got = [t.id for t in stmt.targets]
    call = stmt.call.span
    if want == 0:
        first = stmt.targets[0].span
        edit = Edit(Span(first.line, first.column, call.line, call.column), "")
        title = f"Remove the targets: {inst.entry.name} binds no result"
    elif not got:
        names = _fresh_names(an, inst.entry.results.kind, want)
        edit = Edit(Span(call.line, call.column, call.line, call.column), ", ".join(names) + " = ")
        title = f"Bind the {want} result(s) of {inst.entry.name}"
    else:
        whole = stmt.targets[0].span.cover(stmt.targets[-1].span)
        names = got[:want] + _fresh_names(an, inst.entry.results.kind, max(0, want - len(got)))
        edit = Edit(whole, ", ".join(names))
        title = f"Bind {want} result(s): {', '.join(names)}"
    return [Action(title, "quickfix", [edit], d, preferred=True)]


def _fix_unused(an: Analysis, d: Diagnostic) -> list[Action]:
    stmt = _call_stmt(an, d.span)
    if stmt is None:
        return []
    end_line = stmt.span.end_line
    if end_line < len(an.lines):
        span = Span(stmt.span.line, 1, end_line + 1, 1)
    else:
        span = Span(stmt.span.line, 1, end_line, len(an.lines[end_line - 1]) + 1)
    return [Action(f"Remove the unused {stmt.call.func.id}", "quickfix", [Edit(span, "")], d, preferred=True)]


def _fix_decision(an: Analysis, d: Diagnostic) -> list[Action]:
    stmt = _call_stmt(an, d.span)
    if stmt is None:
        return []
    text = json.dumps(d.suggestion).replace(",", ", ").replace(",  ", ", ")
    for arg in stmt.call.args:
        if arg.name is not None and arg.name.id == "decision":
            return [
                Action(
                    f"Use the decision TVM keeps: {text}", "quickfix", [Edit(arg.value.span, text)], d, preferred=True
                )
            ]
    return []
