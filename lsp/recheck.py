"""Checking a new document version by replaying what checking the previous one did.

`dragon_dsl.check.Checker` walks the statements in order; checking an instruction reads
the kinds and places of the names it refers to and binds, and changes the checker's state
(diagnostics, definitions, labels, the bound instruction, the names it uses).
`IncrementalChecker` remembers both, per statement and per run of statements (a
*segment*, cut where a statement's text hashes to a boundary, so an edit changes the
segment it is in and no other), and replays the effects when what was read is the same
as before (relative to the statement's line). A segment whose statements, line and
surroundings did not change is replayed in a few dictionary updates; that is what makes a
keystroke in a 10,000-line script cost milliseconds. Names referred to but not defined
are never replayed: their "did you mean" weighs every defined name.

The result equals `dragon_dsl.check` on the same statements (a differential test holds
them equal on random edits).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from dragon_dsl.check import BoundInst, Checker
from dragon_dsl.syntax import ast

from dragon_lsp.incremental import _shift_span, shift_diagnostic

try:  # the checker's index of names for "did you mean", where it has one
    from dragon_dsl.hints import NameIndex
except ImportError:  # pragma: no cover
    NameIndex = None

#: A segment ends after a statement whose key hashes to 0 modulo this, or at SEGMENT_MAX statements.
SEGMENT_MOD = 16
SEGMENT_MAX = 64


def _names(stmt) -> tuple[str, ...]:
    """Every name an instruction's arguments refer to (not lambda parameters, not constants)."""
    from dragon_lsp.analysis import walk_names

    out = []
    for arg in stmt.call.args:
        out.extend(n.id for n in walk_names(arg.value))
    return tuple(dict.fromkeys(out))


def _bound(stmt) -> list:
    return [*stmt.targets, *((stmt.label,) if stmt.label is not None else ())]


def _rel(span, line: int):
    return None if span is None else (span.line - line, span.column, span.end_line - line, span.end_column)


if NameIndex is not None:
    class _LazyIndex(NameIndex):
        """The checker's name index, filled only when a hint is asked for (most versions ask none)."""

        def __init__(self):
            super().__init__()
            self.pending: list = []

        def add(self, word: str) -> None:
            self.pending.append(word)

        def _flush(self) -> None:
            pending, self.pending = self.pending, []
            for w in pending:
                NameIndex.add(self, w)

        def __len__(self) -> int:
            self._flush()
            return super().__len__()

        def __contains__(self, word) -> bool:
            self._flush()
            return super().__contains__(word)

        def closest(self, word: str):
            self._flush()
            return super().closest(word)


@dataclass
class Checked:
    """What checking one statement did, relative to its line; `fingerprint`: what it read."""

    line: int
    names: tuple
    fingerprint: tuple
    diags: list
    defined: list  # (name, kind, index relative to the statement's, or -1)
    label: Optional[int]  # the label's relative index when it defined one
    inst: Optional[BoundInst]
    used: tuple


@dataclass
class Segment:
    """What checking a run of statements did (absolute: replayed only where nothing moved)."""

    stmts: tuple
    base: int  # instructions before it
    external: tuple  # names it refers to that it does not bind
    fingerprint: tuple
    kinds: dict
    def_span: dict
    definitions: dict
    labels: dict
    known: list
    diags: list
    insts: list
    used: set


class IncrementalChecker(Checker):
    """`dragon_dsl.check.Checker`, replaying an instruction's (or a segment's) check when nothing it
    reads changed."""

    def __init__(self, previous: Optional[tuple], keys: dict, segments: dict):
        super().__init__()
        if NameIndex is not None and isinstance(getattr(self, "known", None), NameIndex):
            self.known = _LazyIndex()
        self.previous, self.previous_segments = previous or ({}, {})
        self.keys = keys  # id(statement) -> (statement text, ordinal among equal texts, index in the text)
        self.segments = segments  # id(first statement) -> segment key (a tuple of statement keys)
        self.memo: dict = {}
        self.segment_memo: dict = {}
        self._done: set = set()  # ids of statements a replayed segment covered
        self.replayed = 0

    # -- statements -----------------------------------------------------------------------

    def instruction(self, stmt):
        sid = id(stmt)
        if sid in self._done:
            return None
        seg = self.segments.get(sid)
        if seg is not None and not self.extents and self._segment(seg):
            return None
        return self._statement(stmt)

    def _fingerprint(self, stmt, names, line: int) -> Optional[tuple]:
        kinds, spans, labels = self.kinds, self.def_span, self.program.labels
        out = []
        for n in names:
            k = kinds.get(n)
            if k is None:
                return None  # an undefined name: its message weighs every defined name
            out.append((n, k, _rel(spans.get(n), line)))
        for t in _bound(stmt):
            out.append((t.id, kinds.get(t.id), t.id in labels, _rel(spans.get(t.id), line)))
        return tuple(out)

    def _statement(self, stmt):
        key = self.keys.get(id(stmt))
        if key is None or self.extents:
            return super().instruction(stmt)
        line = stmt.span.line
        old = self.previous.get(key)
        names = old.names if old is not None else _names(stmt)
        fp = self._fingerprint(stmt, names, line)
        if fp is None:
            return super().instruction(stmt)
        if old is not None and old.fingerprint == fp:
            d = line - old.line
            self._replay(old, stmt, d)
            self.memo[key] = old if d == 0 else dataclasses.replace(
                old, line=line, diags=[shift_diagnostic(x, d) for x in old.diags],
                inst=self.program.instructions[-1] if old.inst is not None else None)
            return None
        self.memo[key] = self._record(stmt, line, names, fp)
        return None

    def _record(self, stmt, line: int, names, fp) -> Checked:
        n_diags, base = len(self.diags), len(self.program.instructions)
        before = {t.id for t in stmt.targets if t.id in self.kinds}
        had_label = stmt.label is not None and stmt.label.id in self.program.labels
        outer, self.used = self.used, set()  # the names this statement uses, exactly
        try:
            super().instruction(stmt)
        finally:
            used, self.used = self.used, outer
            outer |= used
        defined = []
        for t in stmt.targets:
            if t.id not in before and t.id in self.kinds and t.id in self.program.definitions:
                kind, span, idx = self.program.definitions[t.id]
                if span == t.span:
                    defined.append((t.id, kind, -1 if idx < 0 else idx - base))
        label = None
        if stmt.label is not None and not had_label and stmt.label.id in self.program.labels:
            label = self.program.labels[stmt.label.id] - base
        inst = self.program.instructions[base] if len(self.program.instructions) > base else None
        return Checked(line, names, fp, self.diags[n_diags:], defined, label, inst, tuple(used))

    def _replay(self, c: Checked, stmt, d: int) -> None:
        """Do what checking `stmt` did, through the checker's own `define` and `define_label` (which keep
        whatever indexes the checker has), for names the fingerprint shows they will accept."""
        self.replayed += 1
        base = len(self.program.instructions)
        if c.label is not None:
            self.define_label(stmt.label, base + c.label)
        by_id = {t.id: t for t in stmt.targets}
        groups: dict = {}
        for name, kind, rel in c.defined:
            groups.setdefault((kind, rel), []).append(by_id[name])
        for (kind, rel), names in groups.items():
            self.define(names, kind, -1 if rel < 0 else base + rel)
        self.diags.extend(c.diags if not d else [shift_diagnostic(x, d) for x in c.diags])
        if c.inst is not None:
            inst = c.inst if c.inst.stmt is stmt else BoundInst(c.inst.entry, stmt, c.inst.args, c.inst.outputs,
                                                                c.inst.label)
            self.program.instructions.append(inst)
        self.used.update(c.used)

    # -- segments -------------------------------------------------------------------------------

    def _segment_fingerprint(self, stmts, external, bound) -> Optional[tuple]:
        kinds, spans, labels, defs = self.kinds, self.def_span, self.program.labels, self.program.definitions
        out = []
        for n in external:
            k = kinds.get(n)
            if k is None:
                return None
            out.append((n, k, spans.get(n)))
        for n in bound:
            if n in kinds or n in labels or n in spans or n in defs:
                out.append((n, kinds.get(n), n in labels, spans.get(n)))
        return tuple(out)

    def _segment(self, seg: tuple) -> bool:
        """Check (or replay) the segment starting here; False when it cannot be memoized."""
        key, stmts = seg
        old = self.previous_segments.get(key)
        base = len(self.program.instructions)
        if old is not None and len(old.stmts) == len(stmts) and all(a is b for a, b in zip(old.stmts, stmts)):
            fp = self._segment_fingerprint(stmts, old.external, old.definitions.keys() | old.labels.keys())
            if fp is not None and fp == old.fingerprint:
                self._replay_segment(old, base)
                self.segment_memo[key] = old
                return True
        external, bound = self._segment_names(stmts)
        fp = self._segment_fingerprint(stmts, external, bound)
        if fp is None:
            return False
        recorded = self._record_segment(stmts, base, external, fp, bound)
        if recorded is not None:
            self.segment_memo[key] = recorded
        return True

    def _segment_names(self, stmts) -> tuple[tuple, set]:
        bound: set = set()
        external: dict = {}
        for stmt in stmts:
            old = self.previous.get(self.keys.get(id(stmt)))
            for n in (old.names if old is not None else _names(stmt)):
                if n not in bound:
                    external[n] = None
            bound.update(t.id for t in _bound(stmt))
        return tuple(external), bound

    def _record_segment(self, stmts, base: int, external, fp, bound) -> Optional[Segment]:
        kinds, spans, defs, labels = self.kinds, self.def_span, self.program.definitions, self.program.labels
        pre = {n for n in bound if n in kinds or n in spans or n in defs or n in labels}
        n_diags = len(self.diags)
        outer, self.used = self.used, set()
        try:
            for stmt in stmts:
                self._statement(stmt)
                self._done.add(id(stmt))
        finally:
            used, self.used = self.used, outer
            outer |= used
        fresh = [n for n in bound if n not in pre]
        if any(d.code == "DRG101" for d in self.diags[n_diags:]):
            return None  # a name used before it is bound: its hint weighs every defined name
        return Segment(
            stmts=tuple(stmts), base=base, external=external, fingerprint=fp,
            kinds={n: kinds[n] for n in fresh if n in kinds}, def_span={n: spans[n] for n in fresh if n in spans},
            definitions={n: defs[n] for n in fresh if n in defs}, labels={n: labels[n] for n in fresh if n in labels},
            known=[n for n in fresh if n in kinds], diags=self.diags[n_diags:],
            insts=self.program.instructions[base:], used=used)

    def _replay_segment(self, s: Segment, base: int) -> None:
        self.replayed += len(s.stmts)
        self.kinds.update(s.kinds)
        self.def_span.update(s.def_span)
        if base == s.base:
            self.program.definitions.update(s.definitions)
            self.program.labels.update(s.labels)
        else:
            d = base - s.base
            for n, (kind, span, idx) in s.definitions.items():
                self.program.definitions[n] = (kind, span, idx if idx < 0 else idx + d)
            for n, idx in s.labels.items():
                self.program.labels[n] = idx + d
        known = getattr(self, "known", None)
        if isinstance(known, _LazyIndex if NameIndex is not None else ()):
            known.pending.extend(s.known)
        elif known is not None:
            for n in s.known:
                known.add(n)
        self.diags.extend(s.diags)
        self.program.instructions.extend(s.insts)
        self.used |= s.used
        for stmt in s.stmts:
            self._done.add(id(stmt))
        # the statements' own memo entries carry over for the next version
        for stmt in s.stmts:
            k = self.keys.get(id(stmt))
            if k is not None and k in self.previous:
                self.memo[k] = self.previous[k]


def segments_of(stmts: list, keys: dict) -> dict:
    """id(first statement) -> (segment key, its statements): runs of consecutive instructions."""
    out: dict = {}
    run: list = []

    def close():
        if run:
            out[id(run[0])] = (tuple(keys[id(s)] for s in run), tuple(run))
            run.clear()

    for stmt in stmts:
        if type(stmt) is not ast.CallStmt or id(stmt) not in keys:
            close()
            continue
        run.append(stmt)
        if len(run) >= SEGMENT_MAX or hash(keys[id(stmt)]) % SEGMENT_MOD == 0:
            close()
    close()
    return out


def check_incremental(stmts: list, previous: Optional[tuple], keys: dict):
    """(program, sorted diagnostics, memo for the next version) of parsed statements."""
    c = IncrementalChecker(previous, keys, segments_of(stmts, keys))
    program = c.run(ast.Script(stmts))
    return program, sorted(c.diags, key=lambda d: (d.span.line, d.span.column)), (c.memo, c.segment_memo)
