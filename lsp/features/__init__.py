"""Editor features as plain functions over the language core.

Each takes an `Analysis` (one parsed and checked document version) and a
position in the core's terms (1-based line and column in code points) and
returns plain data with spans (`features.data`). None of them knows LSP types
or position encodings; `dragon_lsp.convert` does that.
"""
