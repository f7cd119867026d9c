"""Diagnostics: errors as data.

Every problem the language core finds is a `Diagnostic` with a stable code, a
severity, one primary span, optional related spans and a message written in
the DSL's words. Nothing in the core raises on user text; the few public
functions that must fail (`to_trace_json`) raise `DragonError`, which carries
the diagnostics.

The catalogue `CODES` is the single list of codes: tests hold one golden case
per code, and the documentation lists them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple


class Span(NamedTuple):
    """A range in the source: 1-based line and column, end exclusive.

    A named tuple rather than a frozen dataclass: the parser makes one per node,
    and tuple construction is several times cheaper.
    """

    line: int
    column: int
    end_line: int
    end_column: int

    @staticmethod
    def point(line: int, column: int) -> Span:
        return Span(line, column, line, column + 1)

    def cover(self, other: Span) -> Span:
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(start[0], start[1], end[0], end[1])


#: The span used for diagnostics about data that has no source text (trace JSON).
NOWHERE = Span(1, 1, 1, 1)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Related:
    span: Span
    message: str


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    span: Span
    message: str
    related: tuple[Related, ...] = field(default=())
    # What the message proposes instead, as data for quick fixes: a name for "did you
    # mean", the decision TVM keeps for a repaired decision. None when nothing is proposed.
    suggestion: Any = None

    def render(self, filename: str = "<script>") -> str:
        s = self.span
        return f"{filename}:{s.line}:{s.column}: {self.severity.value} {self.code}: {self.message}"


# code -> (severity, short title). Messages are built where the problem is found.
CODES: dict[str, tuple[Severity, str]] = {
    # 0xx: lexical and syntax
    "DRG001": (Severity.ERROR, "unexpected character"),
    "DRG002": (Severity.ERROR, "unexpected token"),
    "DRG003": (Severity.ERROR, "unexpected end of input"),
    "DRG004": (Severity.ERROR, "invalid string literal"),
    "DRG005": (Severity.ERROR, "limit exceeded"),  # dragon_dsl/language/limits.py: nesting, script size, integer digits
    # 1xx: names and definitions
    "DRG101": (Severity.ERROR, "undefined variable"),
    "DRG102": (Severity.ERROR, "argument of the wrong kind"),
    "DRG103": (Severity.ERROR, "duplicate definition"),
    "DRG104": (Severity.WARNING, "unused result of a pure instruction"),
    "DRG105": (Severity.ERROR, "reserved name"),
    "DRG106": (Severity.WARNING, "a cache the script made is inlined again"),
    "DRG107": (Severity.WARNING, "a cache the script made is moved to another storage scope"),
    "DRG108": (Severity.WARNING, "no instructions"),  # dragon_dsl/levels.py: an empty file passes otherwise
    # 2xx: instructions and arguments
    "DRG201": (Severity.ERROR, "unknown instruction"),
    "DRG202": (Severity.ERROR, "missing argument"),
    "DRG203": (Severity.ERROR, "too many arguments"),
    "DRG204": (Severity.ERROR, "unknown keyword argument"),
    "DRG205": (Severity.ERROR, "argument given twice"),
    "DRG206": (Severity.ERROR, "wrong number of results"),
    "DRG207": (Severity.ERROR, "value out of its domain"),
    "DRG208": (Severity.ERROR, "expression not allowed here"),
    "DRG209": (Severity.ERROR, "invalid index map"),
    # 3xx: decisions
    "DRG301": (Severity.ERROR, "decision of the wrong shape"),
    "DRG302": (Severity.ERROR, "decision out of range"),
    "DRG303": (Severity.ERROR, "tile decision does not match the loop extent"),
    # 4xx: structure (header, sections, explanation graph)
    "DRG401": (Severity.ERROR, "unknown header directive"),
    "DRG402": (Severity.ERROR, "header directive after the first instruction"),
    "DRG403": (Severity.ERROR, "unknown section"),
    "DRG404": (Severity.ERROR, "dangling explanation link"),
    "DRG405": (Severity.ERROR, "invalid explanation entry"),
    "DRG406": (Severity.ERROR, "duplicate header directive"),
    # 5xx: trace JSON (decoding)
    "DRG501": (Severity.ERROR, "malformed trace JSON"),
    "DRG502": (Severity.ERROR, "unknown instruction kind"),
    "DRG503": (Severity.ERROR, "output name already bound"),
    "DRG504": (Severity.ERROR, "invalid decision entry"),
    "DRG505": (Severity.ERROR, "value not encodable"),
    # 6xx: replay on TVM
    "DRG601": (Severity.ERROR, "TVM rejected the instruction"),
    "DRG602": (Severity.ERROR, "workload cannot be loaded"),
    "DRG603": (Severity.ERROR, "no workload to replay on"),
    "DRG604": (Severity.ERROR, "reads or writes outside a buffer"),
    # 7xx: build, verify and time (the measurement engine)
    "DRG701": (Severity.ERROR, "build failed"),
    "DRG702": (Severity.ERROR, "the kernel crashed"),
    "DRG703": (Severity.ERROR, "timed out"),
    "DRG704": (Severity.ERROR, "wrong result"),
    "DRG705": (Severity.ERROR, "output not written"),
    "DRG706": (Severity.INFO, "measured latency"),
    "DRG707": (Severity.WARNING, "kernel launched from a host loop"),
    "DRG708": (Severity.WARNING, "kernel leaves the GPU idle"),
}


def make(code: str, span: Span, message: str, related: tuple[Related, ...] = (), suggestion: Any = None) -> Diagnostic:
    severity = CODES[code][0]
    return Diagnostic(code, severity, span, message, related, suggestion)


def has_errors(diags) -> bool:
    return any(d.severity is Severity.ERROR for d in diags)


class DragonError(ValueError):
    """Raised by the codec's public functions on invalid input; carries diagnostics."""

    def __init__(self, diagnostics: list[Diagnostic], source_name: str = "<script>"):
        self.diagnostics = list(diagnostics)
        lines = [d.render(source_name) for d in self.diagnostics if d.severity is Severity.ERROR]
        super().__init__("\n".join(lines) or "invalid script")
