"""Hover, go to definition, references, rename."""

from __future__ import annotations

from dragon_lsp import convert
from dragon_lsp.features import hover, navigation
from dragon_lsp.handlers import InvalidParams, document, position


def register(host) -> None:
    session = host.session

    @host.feature("textDocument/hover")
    def on_hover(params):
        uri, an = document(host, params)
        if an is None:
            return None
        line, col = position(host, an, params.position)
        return convert.hover(
            hover.hover(an, line, col, session.facts(uri)), an.lines, session.encoding, host.caps.get("md_hover", False)
        )

    @host.feature("textDocument/definition")
    def on_definition(params):
        uri, an = document(host, params)
        if an is None:
            return None
        span = navigation.definition(an, *position(host, an, params.position))
        return None if span is None else convert.location(uri, span, an.lines, session.encoding)

    @host.feature("textDocument/references", default=[])
    def on_references(params):
        uri, an = document(host, params)
        if an is None:
            return []
        spans = navigation.references(an, *position(host, an, params.position), params.context.include_declaration)
        return [convert.location(uri, s, an.lines, session.encoding) for s in spans]

    @host.feature("textDocument/prepareRename")
    def on_prepare_rename(params):
        uri, an = document(host, params)
        if an is None:
            return None
        found = navigation.prepare_rename(an, *position(host, an, params.position))
        return None if found is None else convert.prepare_rename(*found, an.lines, session.encoding)

    @host.feature("textDocument/rename")
    def on_rename(params):
        uri, an = document(host, params)
        if an is None:
            return None
        try:
            edits = navigation.rename(an, *position(host, an, params.position), params.new_name)
        except navigation.RenameError as exc:
            raise InvalidParams(str(exc)) from None
        return convert.workspace_edit(uri, edits, an.lines, session.encoding)
