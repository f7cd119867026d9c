"""Formatting: the canonical form from `dragon_dsl.format_text`, as small line edits.

A range formats as the whole document would, keeping only the changes that touch the range.
"""

from __future__ import annotations

import difflib
import re

from dragon_dsl import format_text
from dragon_dsl.language.diagnostics import DragonError, Span
from dragon_lsp.features.data import Edit

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def _hunks(text: str, new: str):
    old_lines, new_lines = _LINE.findall(text), _LINE.findall(new)
    lines = text.split("\n")
    end = (len(lines), len(lines[-1]) + 1)
    sm = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        a = (i1 + 1, 1) if i1 < len(old_lines) else end
        b = (i2 + 1, 1) if i2 < len(old_lines) else end
        yield i1, i2, Edit(Span(a[0], a[1], b[0], b[1]), "".join(new_lines[j1:j2]))


def format_document(text: str, eol: str = "\n") -> list[Edit] | None:
    """None when the text does not parse (nothing to format safely)."""
    try:
        new = format_text(text)
    except DragonError:
        return None
    return [_eol(e, eol) for _i1, _i2, e in _hunks(text, new)]


def format_range(text: str, first_line: int, last_line: int, eol: str = "\n") -> list[Edit] | None:
    try:
        new = format_text(text)
    except DragonError:
        return None
    out = []
    for i1, i2, e in _hunks(text, new):
        if i1 == i2:
            touches = first_line <= i1 + 1 <= last_line + 1
        else:
            touches = i1 + 1 <= last_line and i2 >= first_line
        if touches:
            out.append(_eol(e, eol))
    return out


def _eol(e: Edit, eol: str) -> Edit:
    return e if eol == "\n" else Edit(e.span, e.text.replace("\n", eol))
