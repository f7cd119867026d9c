"""The checked program: what `check()` returns (every instruction bound to its table entry,
arguments typed) and what the codec, the replay, explain and the editor read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dragon_dsl.language.diagnostics import Span
from dragon_dsl.language.table import Instruction, Param

DISCARD = "_"


@dataclass
class BoundInst:
    """An instruction with its arguments typed and bound to the table's parameters."""

    entry: Instruction
    stmt: Any  # ast.CallStmt, or ast.Section for enter_postproc
    args: dict[str, Any]  # parameter name -> typed value; absent: the default
    outputs: list[str]
    label: str | None = None

    @property
    def span(self) -> Span:
        return self.stmt.span

    def value(self, param: Param):
        return self.args.get(param.name, param.default)


@dataclass
class ExplainEntry:
    kind: str
    name: str | None
    text: str
    links: dict[str, list[str]]
    data: dict[str, Any]
    stmt: Any


@dataclass
class Program:
    workload: str | None = None
    target: Any = None  # a tag string or a dict
    instructions: list[BoundInst] = field(default_factory=list)
    explain: list[ExplainEntry] = field(default_factory=list)
    definitions: dict[str, tuple[str, Span, int]] = field(default_factory=dict)  # name -> (kind, span, inst index)
    labels: dict[str, int] = field(default_factory=dict)  # label -> instruction index
