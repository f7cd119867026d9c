"""Printing: syntax tree -> text, one statement per line.

The printer spells what the tree holds; canonical choices (which arguments to
write, how bools read) are made before, by `dragon_dsl.language.canonical`.
"""

from __future__ import annotations

from dragon_dsl.language.syntax import ast
from dragon_dsl.language.syntax.lexical import float_text, string_text

#: The canonical spelling of a string (kept under this name for callers of the printer).
quote = string_text
__all__ = ["arg", "expr", "float_text", "quote", "script", "statement"]


_PREC = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}


def expr(e, prec: int = 0) -> str:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Str):
        return quote(e.value)
    if isinstance(e, ast.Int):
        return str(e.value)
    if isinstance(e, ast.Float):
        return float_text(e.value)
    if isinstance(e, ast.Verbatim):
        return e.text
    if isinstance(e, ast.ListExpr):
        return "[" + ", ".join(expr(x) for x in e.items) + "]"
    if isinstance(e, ast.TupleExpr):
        if len(e.items) == 1:
            return "(" + expr(e.items[0]) + ",)"
        return "(" + ", ".join(expr(x) for x in e.items) + ")"
    if isinstance(e, ast.DictExpr):
        return "{" + ", ".join(f"{quote(k.value)}: {expr(v)}" for k, v in e.items) + "}"
    if isinstance(e, ast.Call):
        return f"{e.func.id}(" + ", ".join(arg(a) for a in e.args) + ")"
    if isinstance(e, ast.Neg):
        return "-" + expr(e.operand, 3)
    if isinstance(e, ast.BinOp):
        p = _PREC[e.op]
        text = f"{expr(e.left, p)} {e.op} {expr(e.right, p + 1)}"
        return f"({text})" if p < prec else text
    if isinstance(e, ast.Lambda):
        if any(p.dtype for p in e.params):
            params = " (" + ", ".join(f"{p.name}: {p.dtype or 'int32'}" for p in e.params) + ")"
        else:
            params = (" " + ", ".join(p.name for p in e.params)) if e.params else ""
        return f"lambda{params}: {expr(e.body)}"
    raise TypeError(f"cannot print {type(e).__name__}")  # pragma: no cover


def arg(a: ast.Arg) -> str:
    return f"{a.name.id}={expr(a.value)}" if a.name is not None else expr(a.value)


def statement(s) -> str:
    if isinstance(s, ast.Directive):
        return f"{s.name.id} {expr(s.value)}"
    if isinstance(s, ast.Section):
        return f"{s.name.id}:"
    head = f"{s.label.id}: " if s.label is not None else ""
    if s.targets:
        head += ", ".join(t.id for t in s.targets) + " = "
    return head + expr(s.call)


def script(sc: ast.Script) -> str:
    """Print a whole script with its comments; sections are preceded by a blank line."""
    lines: list[str] = []
    prev = None
    for s in sc.statements:
        t = s.trivia
        header_done = prev is not None and isinstance(prev, ast.Directive) and not isinstance(s, ast.Directive)
        if lines and (t.blank_before or isinstance(s, ast.Section) or header_done):
            lines.append("")
        lines.extend(c.rstrip() for c in t.leading)
        text = statement(s)
        if t.trailing:
            text += "  " + t.trailing.rstrip()
        lines.append(text)
        prev = s
    if sc.trailing_comments:
        if lines and sc.trailing_blank:
            lines.append("")
        lines.extend(c.rstrip() for c in sc.trailing_comments)
    return "\n".join(lines) + "\n" if lines else ""
