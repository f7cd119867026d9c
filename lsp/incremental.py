"""Incremental analysis: a new document version re-parses and re-checks only what an edit changed.

An editor sends a new version per keystroke; parsing and checking a 10,000-line script
from scratch takes seconds. Three things are carried from one version to the next:

1. the cut into statements (`logical_lines`): the edit is the text between the common
   prefix and suffix of the two versions; only the statements around it are cut again,
   the ones after it move by the edit's length and line count;
2. parsed statements, keyed by (first line, text): an unchanged statement is the same
   object; a statement that only moved is the old one with its lines shifted;
3. check results, per statement and per run of statements (`recheck.py`).

The results equal a full `dragon_dsl.parse` + `dragon_dsl.check` of the text (a
differential test holds them equal on random edits).
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from dragon_dsl.diagnostics import Diagnostic, Related, Span
from dragon_dsl.syntax import ast
from dragon_dsl.syntax.fastparse import fast_parse
from dragon_dsl.syntax.parser import logical_lines, parse

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
        if old[len(old) - mid:len(old) - lo] == new[len(new) - mid:len(new) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return p, len(old) - lo, len(new) - lo


_CONTINUES = frozenset(" \t\n)]}#,")  # a line starting so may continue the statement above


def recut(old_text: str, old_cut: list, new_text: str) -> list:
    """`logical_lines(new_text)`, computed from the old version's cut: the statements before the
    edit are kept, the ones after it shifted, only those around it cut again."""
    if not old_cut:
        return logical_lines(new_text)
    p, old_end, new_end = changed_region(old_text, new_text)
    if p == old_end == new_end:
        return old_cut
    delta = new_end - old_end
    lines_delta = new_text.count("\n", p, new_end) - old_text.count("\n", p, old_end)
    ends = [c[2] for c in old_cut]
    # keep statements that end (with the line break after them and the next character) before the edit
    i = bisect.bisect_left(ends, p - 1)
    head = old_cut[:i]
    start, first_line = (old_cut[i][1], old_cut[i][0]) if i < len(old_cut) else (len(old_text), None)
    # the first statement after the edit that starts unindented: a boundary in both versions
    j = i
    while j < len(old_cut):
        s = old_cut[j][1]
        if s - 1 > old_end and s < len(old_text) and old_text[s] not in _CONTINUES:
            break
        j += 1
    if i >= len(old_cut) or j >= len(old_cut):
        return logical_lines(new_text)
    stop = old_cut[j][1] + delta
    mid = logical_lines(new_text[start:stop])
    base = first_line - 1
    out = head
    for fl, a, b in mid:
        out.append((fl + base, a + start, b + start))
    last = out[-1]
    if last[1] == stop and last[2] == stop:  # the empty remainder after the final line break
        out.pop()
        last = out[-1]
    if last[2] == stop and new_text[stop - 1] == "\n":  # the boundary the next statement forces
        out[-1] = (last[0], last[1], stop - 1)
    for fl, a, b in old_cut[j:]:
        out.append((fl + lines_delta, a + delta, b + delta))
    return out


# ---- statements: parsed once, shifted when they move ------------------------------------------------


def _shift_span(s: Span, d: int) -> Span:
    return Span(s.line + d, s.column, s.end_line + d, s.end_column)


def shift(node: Any, d: int) -> Any:
    """A copy of a tree (or a list of them) d lines lower."""
    if isinstance(node, list):
        return [shift(x, d) for x in node]
    if isinstance(node, Span):
        return _shift_span(node, d)
    if isinstance(node, tuple):
        return tuple(shift(x, d) for x in node)
    fields = _FIELDS.get(type(node))
    if fields is None:
        if not dataclasses.is_dataclass(node) or isinstance(node, type):
            return node
        fields = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    return type(node)(*[shift(getattr(node, f), d) for f in fields])


_FIELDS: dict = {}


def shift_diagnostic(diag: Diagnostic, d: int) -> Diagnostic:
    if d == 0:
        return diag
    return dataclasses.replace(diag, span=_shift_span(diag.span, d),
                               related=tuple(Related(_shift_span(r.span, d), r.message) for r in diag.related))


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
    """One version's statements: (first line, text) -> (statements, diagnostics); text -> a key."""

    cut: list
    by_key: dict
    by_text: dict


def parse_incremental(text: str, previous: Optional["Parsed"], old_text: Optional[str]):
    """(statements, syntax diagnostics, Parsed, memo keys) of normalized text, reusing the previous
    version's."""
    cut = recut(old_text, previous.cut, text) if previous is not None else logical_lines(text)
    if previous is None:  # a first version: the whole text in one go when it is well formed
        previous = _distribute(text, cut)
    old_key = previous.by_key if previous is not None else {}
    old_text_idx = previous.by_text if previous is not None else {}
    by_key: dict = {}
    by_text: dict = {}
    counts: dict = {}
    keys: dict = {}  # id(statement) -> (its text, ordinal of that text, index in it): the checker's memo key
    pieces: list = []  # (key, (statements, diagnostics))
    for first_line, start, end in cut:
        chunk = text[start:end]
        if not chunk.strip():
            continue
        key = (first_line, chunk)
        hit = old_key.get(key)
        if hit is None:
            moved = old_text_idx.get(chunk)
            if moved is not None:
                d = first_line - moved[0]
                ss, ds = old_key[moved]
                hit = (shift(ss, d), [shift_diagnostic(x, d) for x in ds])
            else:
                hit = parse_statement(chunk, first_line)
        by_key[key] = hit
        by_text[chunk] = key
        pieces.append((key, hit))
    if any(hit[1] for _key, hit in pieces):
        pieces = _joined(pieces)
    stmts: list = []
    diags: list = []
    for (_line, chunk), hit in pieces:
        ordinal = counts[chunk] = counts.get(chunk, -1) + 1
        for i, s in enumerate(hit[0]):
            keys[id(s)] = (chunk, ordinal, i)
        stmts.extend(hit[0])
        diags.extend(hit[1])
    return stmts, diags, Parsed(cut, by_key, by_text), keys


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
        key, hit = pieces[k]
        if not hit[1]:
            out.append(pieces[k])
            k += 1
            continue
        text = key[1]
        for m in range(k + 1, min(len(pieces), k + _JOIN_LIMIT)):
            nxt = pieces[m][0]
            text += "\n" * (nxt[0] - key[0] - text.count("\n")) + nxt[1]
            stmts = fast_parse(text)
            if stmts is not None:
                stmts = [s for s in stmts if s is not None]
                out.append(((key[0], text), (shift(stmts, key[0] - 1) if key[0] > 1 else stmts, [])))
                k = m + 1
                break
        else:
            return pieces
    return out


def _distribute(text: str, cut: list) -> Optional[Parsed]:
    """The fast parser's statements of a whole well-formed text, keyed as `parse_incremental` keys them."""
    whole = fast_parse(text)
    if whole is None:
        return None
    stmts = [s for s in whole if s is not None]
    by_key: dict = {}
    k = 0
    for first_line, start, end in cut:
        chunk = text[start:end]
        if not chunk.strip():
            continue
        last_line = first_line + chunk.count("\n")
        mine = []
        while k < len(stmts) and stmts[k].span.line <= last_line:
            mine.append(stmts[k])
            k += 1
        by_key[(first_line, chunk)] = (mine, [])
    if k != len(stmts):
        return None
    return Parsed(cut, by_key, {})
