"""Rendering diagnostics for terminals: file:line:col, the source line and a caret."""

from __future__ import annotations

from dragon_dsl.diagnostics import Diagnostic, Severity

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def render_diagnostic(d: Diagnostic, source: str, filename: str) -> str:
    """Plain text: the header line, the source line and a caret under the span."""
    out = [d.render(filename)]
    lines = source.splitlines()
    if 1 <= d.span.line <= len(lines):
        line = lines[d.span.line - 1]
        width = (d.span.end_column - d.span.column) if d.span.end_line == d.span.line else len(line) - d.span.column + 1
        out.append(f"  {d.span.line:>4} | {line}")
        out.append("       | " + " " * (d.span.column - 1) + "^" * max(1, width))
    for r in d.related:
        out.append(f"  note: {filename}:{r.span.line}:{r.span.column}: {r.message}")
    return "\n".join(out)


def print_diagnostics(console, diags, source: str, filename: str) -> None:
    for d in diags:
        text = render_diagnostic(d, source, filename)
        head, _, rest = text.partition("\n")
        console.print(head, style=_STYLE[d.severity], markup=False, highlight=False, soft_wrap=True)
        if rest:
            console.print(rest, markup=False, highlight=False, soft_wrap=True)
