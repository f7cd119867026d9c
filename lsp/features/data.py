"""The plain data the features return. Spans are the core's: 1-based, code points, end exclusive."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from dragon_dsl.language.diagnostics import Diagnostic, Span


@dataclass(frozen=True)
class Edit:
    span: Span
    text: str


@dataclass
class HoverInfo:
    markdown: str
    span: Optional[Span] = None


@dataclass
class CompletionEntry:
    label: str
    kind: str  # instruction, keyword, variable, block, value, constant, directive, section, explain, snippet
    detail: str = ""
    doc: str = ""
    insert: Optional[str] = None  # plain text to insert (default: the label)
    snippet: Optional[str] = None  # the same in LSP snippet syntax, when the client takes snippets
    replace: Optional[Span] = None  # the text the item replaces (the word or string being typed)
    sort: Optional[str] = None
    filter: Optional[str] = None


@dataclass
class SignatureInfo:
    label: str
    doc: str
    params: list[tuple[int, int, str]]  # offsets into label (ASCII) and the parameter's doc
    active: Optional[int]


@dataclass(frozen=True)
class Token:
    line: int
    col: int
    length: int  # code points; a token never spans lines
    type: str
    modifiers: tuple[str, ...] = ()


@dataclass
class Symbol:
    name: str
    kind: str  # directive, section, instruction, variable, explain
    span: Span
    selection: Span
    detail: str = ""
    children: list["Symbol"] = field(default_factory=list)


@dataclass(frozen=True)
class Hint:
    line: int
    col: int
    label: str
    kind: str = "type"  # type or parameter
    tooltip: str = ""
    pad_left: bool = False
    pad_right: bool = False


@dataclass
class Action:
    title: str
    kind: str  # quickfix, rewrite, source
    edits: Optional[list[Edit]] = None
    diagnostic: Optional[Diagnostic] = None
    command: Optional[tuple[str, list]] = None
    preferred: bool = False


@dataclass
class ReplayFacts:
    """What a replay on the workload found, for one document version.

    variables: name -> {"extent": int} for a loop (at the point it was bound),
               {"block": str} for a block, {"value": int} for a sampled value.
    decisions: instruction index -> the decision TVM used (sampled when the script gives none).
    """

    version: Optional[int]
    variables: dict = field(default_factory=dict)
    decisions: dict = field(default_factory=dict)
