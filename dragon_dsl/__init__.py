"""Little Dragon: the Dragon schedule language and the tools built on it.

The package's folders are its layers (ARCHITECTURE.md): `language/` (the core), `tvm/` (the
TVM bridge), `levels.py` (the check-level ladder), `engine/`, `explain/`, `corpus/`, `eval/`
and `cli/`. This module re-exports the language core's public API:
    from_trace_json(trace_json, *, workload=None, target=None) -> str
    to_trace_json(text) -> list
    parse(text) -> (Script, diagnostics)
    check_text(text) -> (Program, diagnostics)
    format_text(text) -> str
    DragonError, Diagnostic, Span

Invariants (see ARCHITECTURE.md): the language core (`dragon_dsl.language`) does no I/O, never
imports TVM (only the bridge and the engine do), and nothing evaluates user text.
"""

from __future__ import annotations

__version__ = "0.1.0"

from dragon_dsl.language._gc import paused_gc
from dragon_dsl.language.check import Program, check
from dragon_dsl.language.codec.decode import decode
from dragon_dsl.language.codec.encode import encode
from dragon_dsl.language.diagnostics import Diagnostic, DragonError, Severity, Span
from dragon_dsl.language.format import format_script, format_text
from dragon_dsl.language.syntax import printer
from dragon_dsl.language.syntax.parser import parse
from dragon_dsl.language.table import BY_KIND, BY_NAME, INSTRUCTIONS

__all__ = [
    "BY_KIND",
    "BY_NAME",
    "INSTRUCTIONS",
    "Diagnostic",
    "DragonError",
    "Program",
    "Severity",
    "Span",
    "check_text",
    "format_script",
    "format_text",
    "from_trace_json",
    "parse",
    "to_trace_json",
    "to_program",
]


def check_text(text: str, extents=None):
    """Parse and type-check; returns (Program, diagnostics sorted by position)."""
    with paused_gc():
        script, diags = parse(text)
        program, more = check(script, extents)
    return program, diags + more


def to_program(text: str) -> Program:
    """Parse and check; raise DragonError when there is any error."""
    program, diags = check_text(text)
    if any(d.severity is Severity.ERROR for d in diags):
        raise DragonError(diags)
    return program


def to_trace_json(text: str) -> list:
    """Script text -> TVM trace JSON `[instructions, decisions]` (plain Python lists)."""
    program = to_program(text)
    with paused_gc():
        return encode(program)


def from_trace_json(trace_json, *, workload=None, target=None) -> str:
    """TVM trace JSON (the plain form of `Trace.as_json(remove_postproc=False)`) -> canonical script text."""
    with paused_gc():
        script, diags = decode(trace_json, workload=workload, target=target)
        if script is None:
            raise DragonError(diags, "<trace>")
        return printer.script(script)
