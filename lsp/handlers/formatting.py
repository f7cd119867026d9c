"""Document and range formatting (the canonical form of `dragon-fmt`, as minimal edits)."""

from __future__ import annotations

from dragon_lsp import convert
from dragon_lsp.features import formatting
from dragon_lsp.handlers import document


def register(host) -> None:
    session = host.session

    @host.feature("textDocument/formatting")
    def format_document(params):
        uri, an = document(host, params)
        if an is None:
            return None
        edits = formatting.format_document(an.text, session.eol(uri))
        return None if edits is None else convert.text_edits(edits, an.lines, session.encoding)

    @host.feature("textDocument/rangeFormatting")
    def format_range(params):
        uri, an = document(host, params)
        if an is None:
            return None
        span = convert.from_range(an.lines, params.range, session.encoding)
        last = span.end_line - 1 if span.end_column == 1 and span.end_line > span.line else span.end_line
        edits = formatting.format_range(an.text, span.line, last, session.eol(uri))
        return None if edits is None else convert.text_edits(edits, an.lines, session.encoding)
