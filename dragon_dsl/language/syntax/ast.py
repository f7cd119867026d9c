"""The syntax tree of a Dragon script: plain data with a span on every node.

The tree records what was written, not what it means: a `Call` may name an
unknown instruction and an argument may have the wrong kind. The checker
(`dragon_dsl.language.check`) gives the tree its meaning by reading the instruction
table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from dragon_dsl.language.diagnostics import Span

# ---- expressions ---------------------------------------------------------


@dataclass(eq=False, slots=True)
class Name:
    span: Span
    id: str


@dataclass(eq=False, slots=True)
class Str:
    span: Span
    value: str


@dataclass(eq=False, slots=True)
class Int:
    span: Span
    value: int


@dataclass(eq=False, slots=True)
class Float:
    span: Span
    value: float


@dataclass(eq=False, slots=True)
class ListExpr:
    span: Span
    items: list[Expr]


@dataclass(eq=False, slots=True)
class TupleExpr:
    span: Span
    items: list[Expr]


@dataclass(eq=False, slots=True)
class DictExpr:
    span: Span
    items: list[tuple[Str, Expr]]


@dataclass(eq=False, slots=True)
class Arg:
    span: Span
    name: Name | None  # None for a positional argument
    value: Expr


@dataclass(eq=False, slots=True)
class Call:
    span: Span
    func: Name
    args: list[Arg]


@dataclass(eq=False, slots=True)
class BinOp:
    span: Span
    op: str  # "+", "-", "*", "//", "%"
    left: Expr
    right: Expr


@dataclass(eq=False, slots=True)
class Neg:
    span: Span
    operand: Expr


@dataclass(eq=False, slots=True)
class Param:
    span: Span
    name: str
    dtype: str | None  # None: the default index dtype (int32)


@dataclass(eq=False, slots=True)
class Lambda:
    span: Span
    params: list[Param]
    body: Expr


Expr = Union[Name, Str, Int, Float, ListExpr, TupleExpr, DictExpr, Call, BinOp, Neg, Lambda]


# ---- statements ----------------------------------------------------------


@dataclass(eq=False, slots=True)
class Trivia:
    """Comments and blank lines that belong to a statement (kept by the formatter)."""

    leading: list[str] = field(default_factory=list)  # own-line comments above
    trailing: str | None = None  # comment at the end of the statement's line
    blank_before: bool = False  # an empty line separates it from what precedes


@dataclass(eq=False, slots=True)
class Directive:
    """A header line: `workload "m.tvmscript"` or `target "nvidia/nvidia-h100"`."""

    span: Span
    name: Name
    value: Expr
    trivia: Trivia = field(default_factory=Trivia)


@dataclass(eq=False, slots=True)
class Section:
    """A section header: `postproc:` or `explain:`."""

    span: Span
    name: Name
    trivia: Trivia = field(default_factory=Trivia)


@dataclass(eq=False, slots=True)
class CallStmt:
    """`[label:] [out, ... =] call(...)`: an instruction or an explanation entry."""

    span: Span
    label: Name | None
    targets: list[Name]
    call: Call
    trivia: Trivia = field(default_factory=Trivia)


Stmt = Union[Directive, Section, CallStmt]


@dataclass(eq=False, slots=True)
class Script:
    statements: list[Stmt]
    trailing_comments: list[str] = field(default_factory=list)
    trailing_blank: bool = False


@dataclass(eq=False, slots=True)
class Verbatim:
    """Text produced in canonical form by another layer (an index map's lambda)."""

    span: Span
    text: str
