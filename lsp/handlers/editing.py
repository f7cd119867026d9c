"""Completion and signature help."""

from __future__ import annotations

from dragon_lsp import convert
from dragon_lsp.features import completion, signature
from dragon_lsp.handlers import document, position


def register(host) -> None:
    session, caps = host.session, host.caps

    @host.feature("textDocument/completion", convert.COMPLETION_OPTIONS)
    def on_completion(params):
        uri = params.text_document.uri
        found = session.analysis_before(uri, params.position)
        if found is None:
            return None
        an, line, col = found
        items = completion.complete(
            an, line, col, blocks=host.background.blocks(uri), workload_files=session.workload_files(uri)
        )
        return convert.completion_list(
            items, an.lines, session.encoding, caps["snippets"], caps.get("md_completion", False)
        )

    @host.feature("textDocument/signatureHelp", convert.SIGNATURE_OPTIONS)
    def on_signature_help(params):
        uri, an = document(host, params)
        if an is None:
            return None
        return convert.signature_help(
            signature.signature_help(an.lines, *position(host, an, params.position)), caps.get("md_signature", False)
        )
