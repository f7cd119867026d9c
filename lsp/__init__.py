"""dragon_lsp: the Dragon language server (pygls). Built in issue 8; empty until then."""
