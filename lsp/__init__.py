"""dragon_lsp: the Dragon language server.

Layers (see docs/LSP.md):
    server.py      the pygls server: protocol, framing, the Host handlers register on, main()
    convert.py     conversions between the core's plain data and LSP types, position encodings
                   (server.py and convert.py are the only modules that import pygls or lsprotocol)
    framing.py     reading LSP's headers so that a malformed one costs one message
    handlers/      thin request and notification handlers, one module per feature
    session.py     the server's state: documents, analyses, settings, results tied to versions
    background.py  the work on that state: debounced diagnostics, replay, measurement, suggestions
    commands.py    what the client's commands do and answer
    documents.py   open documents and their text edits (LSP line and column rules)
    analysis.py    one parse + check per document version, with indexes the features share
    incremental.py, recheck.py   a new version re-parses and re-checks only what its edit changed
    features/      plain functions over the language core; they return plain data with spans
    workers.py     long-lived worker processes (spawn) with timeouts and cancellation
    tasks.py       what runs inside a worker: replay, workload facts, build/verify/time
    suggestions.py schedule suggestions: the model when configured, else a short MetaSchedule search

Only the workers do TVM work, through the TVM bridge (dragon_dsl.tvm); the server's process never
imports TVM. Nothing evaluates document text as Python.
"""

__version__ = "0.1.0"
