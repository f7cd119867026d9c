"""Rendering diagnostics for terminals: file:line:col, the source line and a caret.

A source is indexed once (`SourceLines`: the offset of every line start), so
rendering n diagnostics costs time in proportion to n and the lines shown, not
n times the source. A line longer than MAX_SNIPPET_CHARS is shown as a window
around the caret, with "..." where it was cut.
"""

from __future__ import annotations

from dragon_dsl.language.diagnostics import Diagnostic, Severity
from dragon_dsl.language.limits import MAX_SNIPPET_CHARS

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_CUT = "..."


class SourceLines:
    """A source text with the offsets of its lines, made once per file."""

    __slots__ = ("text", "starts")

    def __init__(self, text: str):
        # lines as the parser counts them: a byte order mark is not text, \r\n and \r end lines
        if text.startswith("\ufeff"):
            text = text[1:]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self.text = text
        starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self.starts = starts

    def __len__(self) -> int:
        # as str.splitlines() counts: a final newline does not start another line
        n = len(self.starts)
        return n - 1 if self.text.endswith("\n") or not self.text else n

    def line(self, lineno: int) -> str:
        """Line `lineno` (1-based) without its line break."""
        start = self.starts[lineno - 1]
        end = self.starts[lineno] - 1 if lineno < len(self.starts) else len(self.text)
        return self.text[start:end]


# The last source indexed, as one (text, index) pair: output.to_text renders a report's
# diagnostics one by one with the same source text, so it is indexed once, not once
# per diagnostic.
_last: tuple = (None, None)


def _lines(source: str | SourceLines) -> SourceLines:
    global _last
    if isinstance(source, SourceLines):
        return source
    text, lines = _last
    if text is not source:
        lines = SourceLines(source)
        _last = (source, lines)
    return lines


def snippet(line: str, column: int, width: int) -> tuple[str, int, int]:
    """The part of `line` to show and where the caret goes in it: (text, caret column, caret width).

    A line of at most MAX_SNIPPET_CHARS is shown whole; a longer one as a window of
    that size around the caret, cut at both ends with "...".
    """
    width = max(1, width)
    if len(line) <= MAX_SNIPPET_CHARS:
        return line, column, width
    width = min(width, MAX_SNIPPET_CHARS // 2)
    start = max(0, min(column - 1 - MAX_SNIPPET_CHARS // 3, len(line) - MAX_SNIPPET_CHARS))
    end = start + MAX_SNIPPET_CHARS
    text = line[start:end]
    caret = column - start
    if start > 0:
        text = _CUT + text
        caret += len(_CUT)
    if end < len(line):
        text += _CUT
    return text, caret, width


def render_diagnostic(d: Diagnostic, source: str | SourceLines, filename: str) -> str:
    """Plain text: the header line, the source line and a caret under the span."""
    out = [d.render(filename)]
    lines = _lines(source)
    if 1 <= d.span.line <= len(lines):
        line = lines.line(d.span.line)
        width = (d.span.end_column - d.span.column) if d.span.end_line == d.span.line else len(line) - d.span.column + 1
        text, caret, width = snippet(line, d.span.column, width)
        out.append(f"  {d.span.line:>4} | {text}")
        out.append("       | " + " " * (caret - 1) + "^" * width)
    for r in d.related:
        out.append(f"  note: {filename}:{r.span.line}:{r.span.column}: {r.message}")
    return "\n".join(out)


def render_diagnostics(diags, source: str, filename: str) -> list[str]:
    """Every diagnostic rendered, the source indexed once."""
    lines = SourceLines(source)
    return [render_diagnostic(d, lines, filename) for d in diags]


def print_diagnostics(console, diags, source: str, filename: str) -> None:
    for d, text in zip(diags, render_diagnostics(diags, source, filename)):
        head, _, rest = text.partition("\n")
        console.print(head, style=_STYLE[d.severity], markup=False, highlight=False, soft_wrap=True)
        if rest:
            console.print(rest, markup=False, highlight=False, soft_wrap=True)
