"""dragon_lsp: the Dragon language server.

Layers (see docs/LSP.md):
    server.py      the pygls server: a factory, thin handlers, nothing else
    convert.py     the only module that knows LSP types and position encodings
    session.py     per-server state: documents, settings, debouncing, background work
    documents.py   open documents and their text edits (LSP line and column rules)
    analysis.py    one parse + check per document version, with indexes the features share
    features/      plain functions over the language core; they return plain data with spans
    workers.py     long-lived worker processes (spawn) with timeouts and cancellation
    tasks.py       what runs inside a worker: replay, workload facts, build/verify/time
    search.py      schedule suggestions: the model when it exists, else a short MetaSchedule search

Only workers import TVM. Nothing evaluates document text as Python.
"""

__version__ = "0.1.0"
