"""Incremental analysis: a new document version re-parses and re-checks only what an edit changed.

An editor sends a new version per keystroke; parsing and checking a 10,000-line script
from scratch takes seconds. Three things are carried from one version to the next:

1. the cut into statements (`logical_lines`): the edit is the text between the common
   prefix and suffix of the two versions; only the statements around it are cut again,
   the ones after it move by the edit's length and line count;
2. parsed statements, keyed by (first line, text): an unchanged statement is the same
   object; a statement that only moved is the old one with its lines shifted;
3. check results, per statement and per run of statements (`recheck.py`).

The results equal a full `dragon_dsl.parse` + `dragon_dsl.language.check` of the text (a
differential test holds them equal on random edits).
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass
from typing import Any

from dragon_dsl.language.diagnostics import Diagnostic, Related, Span
from dragon_dsl.language.syntax.fastparse import fast_parse
from dragon_dsl.language.syntax.parser import logical_lines, parse

# ---- the edit: what changed between two versions ----------------------------------------------------


def changed_region(old: str, new: str) -> tuple[int, int, int]:
    """(p, old_end, new_end): old[p:old_end] became new[p:new_end]; the rest is equal."""
    n = min(len(old), len(new))
    lo, hi = 0, n  # the common prefix's length is in [lo, hi]
    while lo < hi:  # halving with C-speed slice comparisons
        mid = (lo + hi + 1) // 2
        if old[lo:mid] == new[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    p = lo
    lo, hi = 0, n - p  # the common suffix's length, not overlapping the prefix
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid : len(old) - lo] == new[len(new) - mid : len(new) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return p, len(old) - lo, len(new) - lo


_CONTINUES = frozenset(" \t\n)]}#,")  # a line starting so may continue the statement above


def recut(old_text: str, old_cut: list, new_text: str) -> tuple[list, int, int, int, int]:
    """`logical_lines(new_text)`, computed from the old version's cut: the statements before the
    edit are kept, the ones after it shifted, only those around it cut again. Returns (cut, i, j,
    n, lines): cut[:i] is old_cut[:i], cut[i:i+n] is new, cut[i+n:] is old_cut[j:] moved by
    `lines` lines (and by the edit's length)."""
    if not old_cut:
        fresh = logical_lines(new_text)
        return fresh, 0, 0, len(fresh), 0
    p, old_end, new_end = changed_region(old_text, new_text)
    if p == old_end == new_end:
        return old_cut, len(old_cut), len(old_cut), 0, 0
    delta = new_end - old_end
    lines_delta = new_text.count("\n", p, new_end) - old_text.count("\n", p, old_end)
    ends = [c[2] for c in old_cut]
    # keep statements that end (with the line break after them and the next character) before the edit
    i = bisect.bisect_left(ends, p - 1)
    # the first statement after the edit that starts unindented: a boundary in both versions
    j = i
    while j < len(old_cut):
        s = old_cut[j][1]
        if s - 1 > old_end and s < len(old_text) and old_text[s] not in _CONTINUES:
            break
        j += 1
    if i >= len(old_cut) or j >= len(old_cut):
        fresh = logical_lines(new_text)
        return fresh, 0, len(old_cut), len(fresh), 0
    start, first_line = old_cut[i][1], old_cut[i][0]
    stop = old_cut[j][1] + delta
    mid = [(fl + first_line - 1, a + start, b + start) for fl, a, b in logical_lines(new_text[start:stop])]
    last = mid[-1]
    if last[1] == stop and last[2] == stop:  # the empty remainder after the final line break
        mid.pop()
        last = mid[-1]
    if last[2] == stop and new_text[stop - 1] == "\n":  # the boundary the next statement forces
        mid[-1] = (last[0], last[1], stop - 1)
    tail = [(fl + lines_delta, a + delta, b + delta) for fl, a, b in old_cut[j:]]
    return old_cut[:i] + mid + tail, i, j, len(mid), lines_delta


# ---- statements: parsed once, shifted when they move ------------------------------------------------


def _shift_span(s: Span, d: int) -> Span:
    return Span(s.line + d, s.column, s.end_line + d, s.end_column)


def shift(node: Any, d: int) -> Any:
    """A copy of a tree (or a list of them) d lines lower."""
    t = type(node)
    if t is list:
        return [shift(x, d) for x in node]
    if t is Span:
        return Span(node[0] + d, node[1], node[2] + d, node[3])
    fields = _FIELDS.get(t)
    if fields is None:  # the node types are slotted dataclasses; anything else is a leaf
        fields = _FIELDS[t] = (
            tuple(f.name for f in dataclasses.fields(node))
            if dataclasses.is_dataclass(node) and not isinstance(node, type)
            else ()
        )
    if fields:
        return t(*[shift(getattr(node, f), d) for f in fields])
    if t is tuple:
        return tuple(shift(x, d) for x in node)
    return node


_FIELDS: dict = {}


def shift_diagnostic(diag: Diagnostic, d: int) -> Diagnostic:
    if d == 0:
        return diag
    return dataclasses.replace(
        diag,
        span=_shift_span(diag.span, d),
        related=tuple(Related(_shift_span(r.span, d), r.message) for r in diag.related),
    )


def parse_statement(chunk: str, first_line: int) -> tuple[list, list[Diagnostic]]:
    """The statements of one logical line starting at `first_line`, and its syntax diagnostics."""
    stmts = fast_parse(chunk)
    if stmts is not None:
        found = ([s for s in stmts if s is not None], [])
    else:
        script, diags = parse(chunk)
        found = (list(script.statements), list(diags))
    if first_line == 1:
        return found
    return shift(found[0], first_line - 1), [shift_diagnostic(x, first_line - 1) for x in found[1]]


@dataclass
class Parsed:
    """One version's statements: the cut, and per cut entry None (blank) or a piece
    (first line, text, statements, syntax diagnostics)."""

    cut: list
    pieces: list


def _piece(first_line: int, chunk: str, pool: dict, by_text: dict, origin: dict):
    if not chunk.strip():
        return None
    hit = pool.get((first_line, chunk))
    if hit is not None:
        return hit
    moved = by_text.get(chunk)
    if moved is not None:
        return _moved(moved, first_line - moved[0], origin)
    return (first_line, chunk, *parse_statement(chunk, first_line))


def _moved(piece, d: int, origin: dict):
    """The piece d lines lower; `origin` maps each moved statement (its id) to the one it moved from."""
    if piece is None or d == 0:
        return piece
    fl, chunk, stmts, diags = piece
    moved = shift(stmts, d)
    for new, old in zip(moved, stmts):
        origin[id(new)] = old
    return fl + d, chunk, moved, [shift_diagnostic(x, d) for x in diags]


def parse_incremental(text: str, previous: Parsed | None, old_text: str | None):
    """(statements, syntax diagnostics, Parsed, origin) of normalized text, reusing the previous
    version's pieces for what the edit left alone; origin: id(moved statement) -> the statement of
    the previous version it is a shifted copy of."""
    origin: dict = {}
    if previous is None:
        cut = logical_lines(text)
        pieces = _distribute(text, cut)
        if pieces is None:
            pieces = [_piece(fl, text[a:b], {}, {}, {}) for fl, a, b in cut]
    else:
        cut, i, j, n, lines_delta = recut(old_text, previous.cut, text)
        old = previous.pieces
        gone = [x for x in old[i:j] if x is not None]
        pool = {(x[0], x[1]): x for x in gone}
        by_text = {x[1]: x for x in gone}
        mid = [_piece(fl, text[a:b], pool, by_text, origin) for fl, a, b in cut[i : i + n]]
        tail = old[j:] if lines_delta == 0 else [_moved(x, lines_delta, origin) for x in old[j:]]
        pieces = old[:i] + mid + tail
    parsed = Parsed(cut, pieces)
    present = [x for x in pieces if x is not None]
    if any(x[3] for x in present):
        present = _joined(present)
    stmts = [st for x in present for st in x[2]]
    diags = [d for x in present if x[3] for d in x[3]]
    return stmts, diags, parsed, origin


#: How many statements a broken one may be joined with (see `_joined`).
_JOIN_LIMIT = 40


def _joined(pieces: list) -> list:
    """The pieces as the core parses them when the whole text is well formed after all.

    The cut into statements is the core's error recovery: it ends a statement at an unindented
    line even inside brackets, and at a line ending in a `\\` continuation. Such a text parses
    as a whole; then each broken piece is joined with the ones after it until they parse. When
    a piece stays broken the core recovers statement by statement too: the pieces stay as cut.
    """
    out: list = []
    k = 0
    while k < len(pieces):
        first_line, text, _stmts, diags = pieces[k]
        if not diags:
            out.append(pieces[k])
            k += 1
            continue
        for m in range(k + 1, min(len(pieces), k + _JOIN_LIMIT)):
            nxt = pieces[m]
            text += "\n" * (nxt[0] - first_line - text.count("\n")) + nxt[1]
            # only a broken piece can close what piece k left open; `\\` joins the next line whatever it is
            if not nxt[3] and not pieces[m - 1][1].rstrip(" \t\f").endswith("\\"):
                continue
            stmts = fast_parse(text)
            if stmts is not None:
                stmts = [x for x in stmts if x is not None]
                out.append((first_line, text, shift(stmts, first_line - 1) if first_line > 1 else stmts, []))
                k = m + 1
                break
        else:
            return pieces
    return out


def _distribute(text: str, cut: list) -> list | None:
    """The pieces of a whole well-formed text, from one run of the fast parser."""
    whole = fast_parse(text)
    if whole is None:
        return None
    stmts = [s for s in whole if s is not None]
    pieces: list = []
    k = 0
    for first_line, start, end in cut:
        chunk = text[start:end]
        if not chunk.strip():
            pieces.append(None)
            continue
        last_line = first_line + chunk.count("\n")
        mine = []
        while k < len(stmts) and stmts[k].span.line <= last_line:
            mine.append(stmts[k])
            k += 1
        pieces.append((first_line, chunk, mine, []))
    return pieces if k == len(stmts) else None
