"""Lark's errors as diagnostics: what the parser of record says when a statement does not
parse (DRG001 a character, DRG002 a token, DRG003 an unclosed bracket, DRG004 a string), in
the script's own words ("expected a name or ')'")."""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from dragon_dsl.language import diagnostics as dg
from dragon_dsl.language.diagnostics import Diagnostic, Span


def _tspan(tok: Token) -> Span:
    return Span(tok.line, tok.column, tok.end_line, tok.end_column)


def _error_diag(exc: UnexpectedInput, text: str, offset: int = 0) -> Diagnostic:
    """The diagnostic for Lark's error on `text`, whose first line is line offset + 1."""
    d = _chunk_error_diag(exc, text)
    if not offset:
        return d
    s = d.span
    return dg.make(
        d.code, Span(s.line + offset, s.column, s.end_line + offset, s.end_column), d.message, d.related, d.suggestion
    )


def _chunk_error_diag(exc: UnexpectedInput, text: str) -> Diagnostic:
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        if ch == '"':
            msg = 'unterminated or invalid string literal (strings use JSON escapes: \\" \\\\ \\n \\t \\uXXXX)'
            return dg.make("DRG004", Span.point(exc.line, exc.column), msg)
        if ch == "0" and text[exc.pos_in_stream + 1 : exc.pos_in_stream + 2].isdigit():
            digits = re.match(r"[0-9]+", text[exc.pos_in_stream :]).group()
            return dg.make(
                "DRG001",
                Span(exc.line, exc.column, exc.line, exc.column + len(digits)),
                f"an integer cannot have a leading zero: write {digits.lstrip('0') or '0'}",
                suggestion=digits.lstrip("0") or "0",
            )
        return dg.make("DRG001", Span.point(exc.line, exc.column), f"unexpected character {ch!r}")
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        body = text.rstrip()  # point just after the last character, not at a trailing newline
        line = body.count("\n") + 1
        col = len(body) - (body.rfind("\n") + 1) + 1
        return dg.make("DRG003", Span.point(line, col), "unexpected end of input: a bracket or call is not closed")
    tok = exc.token
    expected = _describe_expected(exc.expected)
    shown = "end of line" if tok.type == "_NL" else repr(str(tok))
    span = Span.point(tok.line, tok.column) if tok.type == "_NL" else _tspan(tok)
    return dg.make("DRG002", span, f"unexpected {shown}" + (f"; expected {expected}" if expected else ""))


_TERMINAL_WORDS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "COMMA": "','",
    "EQUAL": "'='",
    "COLON": "':'",
    "_NL": "end of line",
    "LAMBDA": "'lambda'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "STAR": "'*'",
    "SLASH": "'/'",
    "PERCENT": "'%'",
    "__ANON_0": "'//'",
}


def _describe_expected(expected) -> str:
    words = sorted({_TERMINAL_WORDS.get(t, t) for t in expected or ()})
    if not words or len(words) > 6:
        return ""
    return ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1]
