"""How the checker words what it finds: one problem of one argument (`_Bad`), "did you mean"
hints, how a message names what was written, and the string domains of the table."""

from __future__ import annotations

import math

from dragon_dsl.language import diagnostics as dg
from dragon_dsl.language import hints
from dragon_dsl.language.diagnostics import Span
from dragon_dsl.language.hints import NameIndex
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import DOMAINS, SCOPE_PREFIXES, STORAGE_SCOPES

_CONSTANTS = {"None": None, "True": True, "False": False, "inf": math.inf, "nan": math.nan}


class _Bad(Exception):
    """One problem with one argument; turned into a diagnostic by the caller."""

    def __init__(self, code: str, span: Span, message: str, related=(), suggestion=None):
        self.diag = dg.make(code, span, message, tuple(related), suggestion)


def _closest(word: str, choices) -> str | None:
    """The closest known word, for "did you mean" (the diagnostic carries it as its suggestion)."""
    if isinstance(choices, NameIndex):
        return choices.closest(word)
    return hints.closest(word, choices)


def _did_you_mean(hint: str | None, suffix: str = "") -> str:
    return f"; did you mean '{hint}{suffix}'?" if hint else ""


_WHAT = {
    ast.Str: "a string",
    ast.Int: "an integer",
    ast.Float: "a float",
    ast.ListExpr: "a list",
    ast.DictExpr: "a dict",
    ast.TupleExpr: "a tuple",
    ast.Lambda: "a lambda",
}


def _describe(e) -> str:
    """How a message names what was written: 'b0', a string, a call of 'read'..."""
    if isinstance(e, ast.Name):
        return f"'{e.id}'"
    if isinstance(e, ast.Call):
        return f"a call of '{e.func.id}'"
    return _WHAT.get(type(e), "an expression")


_ARTICLE = {
    "block": "a block",
    "loop": "a loop",
    "value": "a sampled value",
    "location": "a compute location (only compute_at and reverse_compute_at take one)",
}


def in_domain(t: str, value: str) -> bool:
    """Whether a string is a value of a string type of the table (scope, thread, dtype, buffer_kind)."""
    if t == "scope":
        return value in STORAGE_SCOPES or value.startswith(SCOPE_PREFIXES)
    allowed = DOMAINS.get(t)
    return not allowed or value in allowed
