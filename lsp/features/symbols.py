"""Document symbols: the header, the instructions (named by the results they bind) and the sections."""

from __future__ import annotations

from dragon_dsl.language.diagnostics import Span
from dragon_dsl.language.syntax import ast
from dragon_lsp.analysis import Analysis
from dragon_lsp.features.data import Symbol


def document_symbols(an: Analysis) -> list[Symbol]:
    top: list[Symbol] = []
    section: Symbol | None = None
    for stmt in an.statements:
        if isinstance(stmt, ast.Directive):
            sym = Symbol(stmt.name.id, "directive", stmt.span, stmt.name.span, detail=_short(an, stmt.value.span))
        elif isinstance(stmt, ast.Section):
            section = Symbol(f"{stmt.name.id}:", "section", stmt.span, stmt.name.span)
            top.append(section)
            continue
        elif isinstance(stmt, ast.CallStmt):
            call = stmt.call.func.id
            if stmt.targets:
                name = ", ".join(t.id for t in stmt.targets)
                sel = stmt.targets[0].span.cover(stmt.targets[-1].span)
                kind = "explain" if section is not None and section.name == "explain:" else "variable"
            else:
                name, sel, kind = call, stmt.call.func.span, "instruction"
            detail = call if stmt.targets else ""
            if stmt.label is not None:
                detail = f"{stmt.label.id}: {detail}".rstrip(": ")
            sym = Symbol(name, kind, stmt.span, sel, detail=detail)
        else:
            continue
        if section is not None:
            section.children.append(sym)
            section.span = section.span.cover(sym.span)
        else:
            top.append(sym)
    return top


def _short(an: Analysis, span: Span) -> str:
    if span.line != span.end_line or not 0 < span.line <= len(an.lines):
        return ""
    return an.lines[span.line - 1][span.column - 1 : span.end_column - 1][:80]
