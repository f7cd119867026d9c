"""Semantic tokens: instructions, variables by kind, keyword arguments, labels, sections,
directives, strings, numbers and comments. Lexical, so a line that does not parse is
still coloured; names get their kind from the checked program."""

from __future__ import annotations

from dragon_dsl.language.table import BY_NAME, DIRECTIVES, DTYPES, EXPLAIN_KINDS, SECTIONS
from dragon_lsp.analysis import Analysis
from dragon_lsp.features.context import LEX
from dragon_lsp.features.data import Token


def semantic_tokens(an: Analysis, first_line: int = 1, last_line: int | None = None) -> list[Token]:
    kinds = {name: d[0] for name, d in an.program.definitions.items()}
    labels = set(an.program.labels)
    entries = {e.name for e in an.program.explain if e.name}
    decls = {
        (o.span.line, o.span.column)
        for occs in an.occurrences.values()
        for o in occs
        if o.role in ("def", "label", "entry")
    }
    last_line = len(an.lines) if last_line is None else min(last_line, len(an.lines))
    out: list[Token] = []
    depth = 0
    lambda_params: set[str] = set()
    in_lambda_head = False
    for ln in range(1, last_line + 1):
        line = an.lines[ln - 1]
        toks = [(m.lastgroup, m.group(), m.start() + 1) for m in LEX.finditer(line) if m.lastgroup != "WS"]
        if depth == 0:
            lambda_params = set()
        emit = ln >= first_line
        for i, (kind, text, col) in enumerate(toks):
            nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
            if kind == "OP":
                if text in "([{":
                    depth += 1
                elif text in ")]}":
                    depth = max(0, depth - 1)
                elif text == ":" and in_lambda_head:
                    in_lambda_head = False
                continue
            if not emit:
                if kind == "NAME" and text == "lambda":
                    in_lambda_head = True
                elif kind == "NAME" and in_lambda_head:
                    lambda_params.add(text)
                continue
            if kind == "STR":
                out.append(Token(ln, col, len(text), "string"))
            elif kind == "NUM":
                out.append(Token(ln, col, len(text), "number"))
            elif kind == "COMMENT":
                out.append(Token(ln, col, len(text), "comment"))
            elif kind == "NAME":
                t = _name(
                    text, nxt, i, depth, toks, kinds, labels, entries, decls, ln, col, lambda_params, in_lambda_head
                )
                if text == "lambda":
                    in_lambda_head = True
                elif in_lambda_head:
                    lambda_params.add(text)
                if t is not None:
                    out.append(Token(ln, col, len(text), t[0], t[1]))
    return out


def _name(text, nxt, i, depth, toks, kinds, labels, entries, decls, ln, col, lambda_params, in_lambda_head):
    first = i == 0 and depth == 0
    if text == "lambda":
        return "keyword", ()
    if in_lambda_head:
        return "parameter", ("declaration",)
    if text in ("None", "True", "False"):
        return "keyword", ()
    if text in ("inf", "nan"):
        return "number", ()
    if nxt == "(":
        if text in BY_NAME or text in EXPLAIN_KINDS or text in ("read", "write"):
            return "function", ("defaultLibrary",)
        if text in DTYPES:
            return "type", ()
        return "function", ()
    if nxt == "=" and depth > 0:
        return "parameter", ()
    if first and nxt == ":":
        if text in SECTIONS or text == "explain":
            return "namespace", ()
        return "label", ("declaration",)
    if first and text in DIRECTIVES and (nxt.startswith('"') or nxt == "{"):
        return "keyword", ()
    if text in lambda_params:
        return "parameter", ()
    decl = ("declaration",) if (ln, col) in decls else ()
    if text in kinds:
        k = kinds[text]
        k = "loop" if k == "location" else k  # a sampled compute location is shown as a loop
        return "variable", decl + ((k,) if k in ("block", "loop", "value") else ())
    if text in labels:
        return "label", decl
    if text in entries:
        return "variable", decl + ("readonly",)
    return "variable", ()
