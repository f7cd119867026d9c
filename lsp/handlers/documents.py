"""Document synchronisation: open, change, close, save."""

from __future__ import annotations

from dragon_lsp import convert


def register(host) -> None:
    session, background = host.session, host.background

    @host.feature("textDocument/didOpen")
    def did_open(params):
        d = params.text_document
        session.open(d.uri, d.text, d.version)
        background.opened(d.uri)

    @host.feature("textDocument/didChange")
    def did_change(params):
        uri = params.text_document.uri
        if session.change(uri, params.content_changes, params.text_document.version) is not None:
            background.changed(uri)

    @host.feature("textDocument/didClose")
    def did_close(params):
        uri = params.text_document.uri
        background.closed(uri)
        session.close(uri)

    @host.feature("textDocument/didSave", convert.SAVE_OPTIONS)
    def did_save(params):
        background.saved(params.text_document.uri)
