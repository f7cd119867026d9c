"""Writing the graph: entries -> `explain:` statements, and splicing them into a script.

The formal part of the script is kept byte for byte: the text is cut where an
existing `explain:` section starts (or at its end) and the new section is
appended, printed by the language's own printer so `dragon-fmt` leaves it as it is.
"""

from __future__ import annotations

from dragon_dsl.explain.graph import Entry
from dragon_dsl.language.diagnostics import Span
from dragon_dsl.language.syntax import ast, printer

_NOWHERE = Span(1, 1, 1, 1)
_PREFIX = {"fact": "f", "rationale": "r", "effect": "e"}


def assign_names(entries: list[Entry], taken: set[str]) -> None:
    """Names f1, r1, e1... in order; a name the script already uses is skipped."""
    counters = {k: 0 for k in _PREFIX}
    for e in entries:
        while True:
            counters[e.kind] += 1
            name = f"{_PREFIX[e.kind]}{counters[e.kind]}"
            if name not in taken:
                break
        e.name = name
        taken.add(name)


def _value(v):
    if isinstance(v, bool):
        return ast.Name(_NOWHERE, "True" if v else "False")
    if v is None:
        return ast.Name(_NOWHERE, "None")
    if isinstance(v, int):
        return ast.Neg(_NOWHERE, ast.Int(_NOWHERE, -v)) if v < 0 else ast.Int(_NOWHERE, v)
    if isinstance(v, float):
        return ast.Neg(_NOWHERE, ast.Float(_NOWHERE, -v)) if v < 0 else ast.Float(_NOWHERE, v)
    if isinstance(v, str):
        return ast.Str(_NOWHERE, v)
    if isinstance(v, list):
        return ast.ListExpr(_NOWHERE, [_value(x) for x in v])
    if isinstance(v, dict):
        return ast.DictExpr(_NOWHERE, [(ast.Str(_NOWHERE, str(k)), _value(x)) for k, x in v.items()])
    raise TypeError(f"not a literal: {type(v).__name__}")


def statement(e: Entry) -> str:
    args = [ast.Arg(_NOWHERE, None, ast.Str(_NOWHERE, e.text))]
    for key, targets in e.links.items():
        names = [t.name if isinstance(t, Entry) else t for t in targets]
        if names:
            args.append(
                ast.Arg(
                    _NOWHERE, ast.Name(_NOWHERE, key), ast.ListExpr(_NOWHERE, [ast.Name(_NOWHERE, n) for n in names])
                )
            )
    for key, value in e.data.items():
        args.append(ast.Arg(_NOWHERE, ast.Name(_NOWHERE, key), _value(value)))
    stmt = ast.CallStmt(
        _NOWHERE, None, [ast.Name(_NOWHERE, e.name)], ast.Call(_NOWHERE, ast.Name(_NOWHERE, e.kind), args)
    )
    return printer.statement(stmt)


def without_explain(text: str, script: ast.Script) -> str:
    """The script text up to (not including) its `explain:` section, trailing blank lines removed."""
    for stmt in script.statements:
        if isinstance(stmt, ast.Section) and stmt.name.id == "explain":
            lines = text.splitlines(keepends=True)
            text = "".join(lines[: stmt.span.line - 1])
            break
    return text.rstrip() + "\n" if text.strip() else ""


def splice(formal: str, entries: list[Entry]) -> str:
    """`formal` (a script without explanation) followed by the new `explain:` section."""
    body = "".join(statement(e) + "\n" for e in entries)
    if not formal:
        return "explain:\n" + body
    last = formal.rstrip("\n").rsplit("\n", 1)[-1]
    # a comment right above `explain:` belongs to the section (the printer puts no blank line between)
    sep = "\n" if last.lstrip().startswith("#") else "\n\n"
    return formal.rstrip("\n") + sep + "explain:\n" + body
