"""The server's request and notification handlers, one module per feature.

Each module has `register(host)`: it registers thin handlers on the server through
`host.feature(method, options, default)` / `host.command(name, default)` (see
`server.Host`). A handler reads the request's positions with `convert`, calls a
feature function (`dragon_lsp.features`), the session or its background work, and
converts the plain answer back with `convert`. Handlers never import pygls or
lsprotocol: `server.py` and `convert.py` are the only modules that do.
"""

from __future__ import annotations


class InvalidParams(ValueError):
    """A request the handler cannot carry out as asked: answered with JSON-RPC error -32602."""


def register_all(host) -> None:
    from dragon_lsp.handlers import (
        actions,
        commands,
        display,
        documents,
        editing,
        formatting,
        lifecycle,
        navigation,
    )

    for module in (lifecycle, documents, formatting, navigation, editing, display, actions, commands):
        module.register(host)


def document(host, params):
    """(uri, the analysis of its current version or None when it is not open) of a request's document."""
    uri = params.text_document.uri
    return uri, host.session.analysis(uri)


def position(host, an, pos) -> tuple[int, int]:
    """An LSP position -> (line, column) of the core (1-based code points, clamped)."""
    from dragon_lsp import convert

    return convert.from_position(an.lines, pos, host.session.encoding)
