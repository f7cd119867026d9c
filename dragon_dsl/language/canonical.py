"""The canonical form of an instruction: typed values -> syntax tree.

Both the decoder (trace JSON -> script) and the formatter (script -> script)
write instructions through `canonical_call`, so a formatted script and a
decoded trace read the same: required parameters positional, keyword
parameters only when they differ from the default TVM writes, the decision
last, bools written as TVM stores them for that instruction.
"""

from __future__ import annotations

import math

from dragon_dsl.language.codec import index_map as imap
from dragon_dsl.language.diagnostics import NOWHERE
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import Instruction, Param
from dragon_dsl.language.values import Buffer, Ref


def same_value(a, b) -> bool:
    """Equality that tells 1 from True and 1 from 1.0 (TVM's JSON does)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _name(text: str) -> ast.Name:
    return ast.Name(NOWHERE, text)


def value_ast(value, param: Param | None = None):
    """A typed value as a syntax tree in canonical spelling."""
    if isinstance(value, Ref):
        return _name(value.name)
    if value is None:
        return _name("None")
    if isinstance(value, bool):
        return _name("True" if value else "False")
    if isinstance(value, int):
        if param is not None and param.type == "bool" and param.bool_json == "int" and value in (0, 1):
            return _name("True" if value else "False")
        if value < 0:
            return ast.Neg(NOWHERE, ast.Int(NOWHERE, -value))
        return ast.Int(NOWHERE, value)
    if isinstance(value, float):
        if math.isnan(value):
            return _name("nan")
        if math.isinf(value):
            return _name("inf") if value > 0 else ast.Neg(NOWHERE, _name("inf"))
        if math.copysign(1.0, value) < 0:
            return ast.Neg(NOWHERE, ast.Float(NOWHERE, -value))
        return ast.Float(NOWHERE, value)
    if isinstance(value, str):
        return ast.Str(NOWHERE, value)
    if isinstance(value, list):
        return ast.ListExpr(NOWHERE, [value_ast(v) for v in value])
    if isinstance(value, dict):
        return ast.DictExpr(NOWHERE, [(ast.Str(NOWHERE, k), value_ast(v)) for k, v in value.items()])
    if isinstance(value, Buffer):
        return ast.Call(NOWHERE, _name(value.side), [ast.Arg(NOWHERE, None, ast.Int(NOWHERE, value.index))])
    if isinstance(value, imap.IndexMap):
        return ast.Verbatim(NOWHERE, imap.render(imap.normalize_params(value)))
    raise TypeError(f"no canonical spelling for {value!r}")  # pragma: no cover


def canonical_call(entry: Instruction, args: dict) -> ast.Call:
    out: list[ast.Arg] = []
    for p in entry.params:
        if p.name not in args:
            continue
        v = args[p.name]
        if p.variadic:
            out.extend(ast.Arg(NOWHERE, None, value_ast(x, p)) for x in v)
        elif p.required and not p.keyword:
            out.append(ast.Arg(NOWHERE, None, value_ast(v, p)))
        elif p.required or not same_value(v, p.default):
            out.append(ast.Arg(NOWHERE, _name(p.name), value_ast(v, p)))
    return ast.Call(NOWHERE, _name(entry.name), out)
