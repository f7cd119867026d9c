"""The formatter: script text -> canonical script text, comments kept.

Instructions that check cleanly are rewritten through `canonical_call`, the
same path the decoder uses; anything that does not check is printed as it was
written, so formatting never hides or changes a problem.
"""

from __future__ import annotations

from dragon_dsl.language.canonical import canonical_call, value_ast
from dragon_dsl.language.check import check
from dragon_dsl.language.diagnostics import DragonError, Severity
from dragon_dsl.language.syntax import ast, printer
from dragon_dsl.language.syntax.parser import parse


def format_script(script: ast.Script) -> str:
    program, _ = check(script)
    bound = {id(inst.stmt): inst for inst in program.instructions}
    for stmt in script.statements:
        inst = bound.get(id(stmt))
        if inst is not None and isinstance(stmt, ast.CallStmt):
            stmt.call = canonical_call(inst.entry, inst.args)
    for stmt in script.statements:
        if isinstance(stmt, ast.Directive) and stmt.name.id in ("workload", "target"):
            value = getattr(program, stmt.name.id)
            if value is not None:
                stmt.value = value_ast(value)
    return printer.script(script)


def format_text(text: str) -> str:
    """Format script text. Raises DragonError when the text does not parse."""
    script, diags = parse(text)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        raise DragonError(errors)
    return format_script(script)
