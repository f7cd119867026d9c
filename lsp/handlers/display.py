"""Semantic tokens, document symbols, inlay hints."""

from __future__ import annotations

from dragon_lsp import convert
from dragon_lsp.features import inlay, symbols, tokens
from dragon_lsp.handlers import document


def register(host) -> None:
    session = host.session

    @host.feature("textDocument/semanticTokens/full", convert.LEGEND)
    def on_tokens(params):
        uri, an = document(host, params)
        if an is None:
            return None
        return convert.semantic_tokens(tokens.semantic_tokens(an), an.lines, session.encoding)

    @host.feature("textDocument/semanticTokens/range", convert.LEGEND)
    def on_tokens_range(params):
        uri, an = document(host, params)
        if an is None:
            return None
        span = convert.from_range(an.lines, params.range, session.encoding)
        return convert.semantic_tokens(tokens.semantic_tokens(an, span.line, span.end_line), an.lines, session.encoding)

    @host.feature("textDocument/documentSymbol", default=[])
    def on_symbols(params):
        uri, an = document(host, params)
        if an is None:
            return []
        return [convert.document_symbol(s, an.lines, session.encoding) for s in symbols.document_symbols(an)]

    @host.feature("textDocument/inlayHint", default=[])
    def on_inlay_hints(params):
        uri, an = document(host, params)
        if an is None:
            return []
        span = convert.from_range(an.lines, params.range, session.encoding)
        hints = inlay.inlay_hints(an, session.facts(uri), span.line, span.end_line)
        return [convert.inlay_hint(h, an.lines, session.encoding) for h in hints]
