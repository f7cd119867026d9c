"""The plain data the features return. Spans are the core's: 1-based, code points, end exclusive."""

from __future__ import annotations

from dataclasses import dataclass, field

from dragon_dsl.language.diagnostics import Diagnostic, Span


@dataclass(frozen=True)
class Edit:
    span: Span
    text: str


@dataclass
class HoverInfo:
    markdown: str
    span: Span | None = None


@dataclass
class CompletionEntry:
    label: str
    kind: str  # instruction, keyword, variable, block, value, constant, directive, section, explain, snippet
    detail: str = ""
    doc: str = ""
    insert: str | None = None  # plain text to insert (default: the label)
    snippet: str | None = None  # the same in LSP snippet syntax, when the client takes snippets
    replace: Span | None = None  # the text the item replaces (the word or string being typed)
    sort: str | None = None
    filter: str | None = None


@dataclass
class SignatureInfo:
    label: str
    doc: str
    params: list[tuple[int, int, str]]  # offsets into label (ASCII) and the parameter's doc
    active: int | None


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
    children: list[Symbol] = field(default_factory=list)


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
    edits: list[Edit] | None = None
    diagnostic: Diagnostic | None = None
    command: tuple[str, list] | None = None
    preferred: bool = False


@dataclass
class ReplayFacts:
    """What a replay on the workload found, for one document version.

    variables: name -> {"extent": int} for a loop (at the point it was bound),
               {"block": str} for a block, {"value": int} for a sampled value.
    decisions: instruction index -> the decision TVM used (sampled when the script gives none).
    """

    version: int | None
    variables: dict = field(default_factory=dict)
    decisions: dict = field(default_factory=dict)
