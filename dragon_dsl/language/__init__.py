"""The language core: Dragon's instruction table, syntax, checker, canonical form, codec and formatter.

Everything a contributor must not break lives here, and nothing here does I/O (but `files.py`,
the one atomic write the front ends use), imports TVM, numpy, torch or the editor protocol, or
evaluates user text. The layers above (the TVM bridge, the engine, explanations, corpus,
evaluation, model, command line, language server) build on it; `lint-imports` holds the rule.
The public API is re-exported by `dragon_dsl` itself (`dragon_dsl.check_text`, `to_trace_json`, ...).
"""
