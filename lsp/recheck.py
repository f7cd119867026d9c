"""Checking a new document version by replaying what checking the previous one did.

`dragon_dsl.language.check.Checker` walks the statements in order; checking an instruction reads
the kinds and places of the names it refers to and binds, and changes the checker's state
(diagnostics, definitions, labels, the bound instruction, the names it uses).
`IncrementalChecker` remembers both, per statement and per run of statements (a
*segment*, ended where a statement's names hash to a boundary, so that an edit changes
the segment it is in and no other), and replays the effects when the statements are the
same objects (the parse reuses unchanged ones) and what they read is the same as before.
A segment is replayed in a few dictionary updates: that is what makes a keystroke in a
10,000-line script cost milliseconds. Names used before they are defined are never
replayed: their "did you mean" weighs every defined name.

The memo is shared from one version to the next (`Memo`); its entries hold the statements
they were computed for, and are used only for those very objects.

The result equals `dragon_dsl.language.check` on the same statements (a differential test holds
them equal on random edits).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from dragon_dsl.language.check import BoundInst, Checker
from dragon_dsl.language.hints import NameIndex
from dragon_dsl.language.syntax import ast
from dragon_lsp.incremental import shift_diagnostic

#: A segment ends after a statement whose names hash to 0 modulo this, or at SEGMENT_MAX statements.
SEGMENT_MOD = 96
SEGMENT_MAX = 384


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


def _boundary(stmt) -> bool:
    """Whether a segment ends after `stmt`: decided by its own text, so edits elsewhere keep it."""
    head = stmt.targets[0].id if stmt.targets else ""
    return hash((head, stmt.call.func.id, len(stmt.call.args))) % SEGMENT_MOD == 0


class _Deferred(NameIndex):
    """The checker's name index ("did you mean"), except that names a replay adds in bulk are
    indexed only when a hint is asked for (most versions ask none)."""

    def __init__(self):
        super().__init__()
        self.deferred: list = []

    def add(self, word: str) -> None:
        self.deferred.append(word)

    def _flush(self) -> None:
        if self.deferred:
            deferred, self.deferred = self.deferred, []
            for w in deferred:
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
    """What checking one statement did; `fingerprint`: what it read."""

    stmt: object
    names: tuple
    fingerprint: tuple
    diags: list
    defined: list  # (name, kind, index relative to the statement's, or -1)
    label: int | None  # the label's relative index when it defined one
    inst: BoundInst | None
    used: tuple


@dataclass
class Segment:
    """What checking a run of statements did."""

    stmts: tuple
    base: int  # instructions before it
    external: tuple  # names it refers to that it does not bind first
    bound: tuple  # the names it binds, in order
    fingerprint: tuple
    bound_set: frozenset = frozenset()
    kinds: dict = field(default_factory=dict)
    def_span: dict = field(default_factory=dict)
    definitions: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    diags: list = field(default_factory=list)
    insts: list = field(default_factory=list)
    used: set = field(default_factory=set)


class _Run:
    """A remembered segment standing for its statements in the checker's walk, so that the walk
    visits a few hundred items rather than every statement of a large script."""

    __slots__ = ("segment", "start")

    def __init__(self, segment: Segment, start: int):
        self.segment, self.start = segment, start

    @property
    def span(self):
        return self.segment.stmts[0].span


def _walk(stmts: list, segments: dict) -> list:
    """The statements, each run that a remembered segment covers (the same objects, in order)
    replaced by one `_Run`."""
    out: list = []
    k, n = 0, len(stmts)
    while k < n:
        s = stmts[k]
        seg = segments.get(id(s))
        m = len(seg.stmts) if seg is not None else 0
        if m and seg.stmts[0] is s and k + m <= n and all(map(operator.is_, seg.stmts, stmts[k : k + m])):
            out.append(_Run(seg, k))
            k += m
        else:
            out.append(s)
            k += 1
    return out


@dataclass
class Memo:
    """Check results shared by the versions of one document: id(statement) -> Checked,
    id(first statement) -> Segment."""

    statements: dict = field(default_factory=dict)
    segments: dict = field(default_factory=dict)

    def prune(self, stmts: list, origin: dict) -> None:
        """Forget results for statements no longer in the document (nor moved from), once they
        outnumber the rest."""
        if len(self.statements) + len(self.segments) <= 3 * len(stmts) + 1024:
            return
        alive = {id(s) for s in stmts} | {id(s) for s in origin.values()}
        self.statements = {k: v for k, v in self.statements.items() if k in alive and v.stmt is not None}
        self.segments = {k: v for k, v in self.segments.items() if k in alive}


class IncrementalChecker(Checker):
    """`dragon_dsl.language.check.Checker`, replaying an instruction's (or a segment's) check when nothing it
    reads changed."""

    def __init__(self, memo: Memo, stmts: list, origin: dict | None = None):
        super().__init__()
        self.origin = origin or {}  # id(moved statement) -> the statement it was before the edit
        if isinstance(getattr(self, "known", None), NameIndex):
            self.known = _Deferred()
        self.memo, self.stmts = memo, stmts
        self._pos = 0  # where in `stmts` the walk is (it visits every instruction in order)
        self._skip = 0  # statements of a replayed segment still to pass
        self._plain = 0  # statements still to check one by one (a segment that cannot be replayed)
        self._recording: list | None = None  # [segment, statements left, diagnostics before, used outside]
        self.replayed = 0

    # -- the walk ------------------------------------------------------------------------------

    def instruction(self, stmt):
        if type(stmt) is _Run:
            return self._run(stmt)
        if self.extents:
            return super().instruction(stmt)
        if self._skip:
            self._skip -= 1
            self._pos += 1
            return None
        if self._plain:  # inside a run that cannot be replayed: statement by statement
            self._plain -= 1
            self._pos += 1
        elif self._recording is None:
            if self._start_segment(stmt):
                return None
        else:
            self._pos += 1
        try:
            self._statement(stmt)
        finally:
            if self._recording is not None:
                self._recording[1] -= 1
                if self._recording[1] == 0:
                    self._finish_segment()
        return None

    def _run(self, run: _Run) -> None:
        seg = run.segment
        if self._recording is None and not self._plain and not self._skip:
            fp = self._segment_fingerprint(seg.external, seg.bound_set)
            if fp is not None and fp == seg.fingerprint:
                self._replay_segment(seg)
                self._pos = run.start + len(seg.stmts)
                return
        self._pos = run.start
        for s in seg.stmts:  # what it read changed: check its statements again (and remember anew)
            self.instruction(s)

    def explain_stmt(self, stmt):
        if type(stmt) is _Run:  # statements an `explain:` above them moved into the explanation
            for s in stmt.segment.stmts:
                super().explain_stmt(s)
            return None
        return super().explain_stmt(stmt)

    # -- statements ------------------------------------------------------------------------------

    def _fingerprint(self, stmt, names) -> tuple | None:
        """What checking `stmt` reads, with places relative to its line (a moved statement compares)."""
        kinds, spans, labels = self.kinds, self.def_span, self.program.labels
        line = stmt.span.line
        out = []
        for n in names:
            k = kinds.get(n)
            if k is None:
                return None  # an undefined name: its message weighs every defined name
            out.append((n, k, _rel(spans.get(n), line)))
        for t in _bound(stmt):
            out.append((t.id, kinds.get(t.id), t.id in labels, _rel(spans.get(t.id), line)))
        return tuple(out)

    def _statement(self, stmt) -> None:
        old = self.memo.statements.get(id(stmt))
        if old is not None and old.stmt is not stmt:
            old = None
        if old is None and id(stmt) in self.origin:  # a statement an edit above it moved
            was = self.origin[id(stmt)]
            old = self.memo.statements.get(id(was))
            if old is not None and old.stmt is not was:
                old = None
        names = old.names if old is not None else _names(stmt)
        fp = self._fingerprint(stmt, names)
        if fp is None:
            super().instruction(stmt)
            return
        if old is not None and old.fingerprint == fp:
            if old.stmt is not stmt:  # moved: the same effects, lower
                d = stmt.span.line - old.stmt.span.line
                inst = (
                    None
                    if old.inst is None
                    else BoundInst(old.inst.entry, stmt, old.inst.args, old.inst.outputs, old.inst.label)
                )
                old = Checked(
                    stmt,
                    old.names,
                    fp,
                    [shift_diagnostic(x, d) for x in old.diags],
                    old.defined,
                    old.label,
                    inst,
                    old.used,
                )
                self.memo.statements[id(stmt)] = old
            self._replay(old, stmt)
            return
        self.memo.statements[id(stmt)] = self._record(stmt, names, fp)

    def _record(self, stmt, names, fp) -> Checked:
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
        return Checked(stmt, names, fp, self.diags[n_diags:], defined, label, inst, tuple(used))

    def _replay(self, c: Checked, stmt) -> None:
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
        self.diags.extend(c.diags)
        if c.inst is not None:
            self.program.instructions.append(c.inst)
        self.used.update(c.used)

    # -- segments -------------------------------------------------------------------------------

    def _extent(self, k: int) -> int:
        """How many statements the segment starting at statement k holds (consecutive instructions)."""
        n, stmts = 0, self.stmts
        while k + n < len(stmts) and type(stmts[k + n]) is ast.CallStmt and n < SEGMENT_MAX:
            n += 1
            if _boundary(stmts[k + n - 1]):
                break
        return n

    def _segment_fingerprint(self, external, bound) -> tuple | None:
        kinds, spans, labels, defs = self.kinds, self.def_span, self.program.labels, self.program.definitions
        out = []
        for n in external:
            k = kinds.get(n)
            if k is None:
                return None
            out.append((n, k, spans.get(n)))
        taken = kinds.keys() & bound  # usually none: a segment binds fresh names
        taken |= labels.keys() & bound
        taken |= spans.keys() & bound
        taken |= defs.keys() & bound
        for n in sorted(taken):
            out.append((n, kinds.get(n), n in labels, spans.get(n)))
        return tuple(out)

    def _find(self, stmt) -> int | None:
        stmts, k = self.stmts, self._pos
        while k < len(stmts) and stmts[k] is not stmt:
            k += 1
        if k == len(stmts):
            return None
        self._pos = k + 1
        return k

    def _start_segment(self, stmt) -> bool:
        """Replay the segment that starts here (True), or start recording one (False: check `stmt`)."""
        k = self._find(stmt)
        if k is None:
            return False
        old = self.memo.segments.get(id(stmt))
        if old is not None and old.stmts[0] is stmt:
            n = len(old.stmts)
            if all(map(operator.is_, old.stmts, self.stmts[k : k + n])) and len(self.stmts) >= k + n:
                fp = self._segment_fingerprint(old.external, old.bound_set)
                if fp is not None and fp == old.fingerprint:
                    self._replay_segment(old)
                    self._skip = n - 1
                    return True
        n = self._extent(k)
        stmts = tuple(self.stmts[k : k + n])
        external, bound = self._segment_names(stmts)
        fp = self._segment_fingerprint(external, bound.keys())
        if fp is None or n < 2:
            self._plain = n - 1  # checked statement by statement, up to where the next segment starts
            return False
        seg = Segment(stmts, len(self.program.instructions), external, tuple(bound), fp, bound_set=frozenset(bound))
        kinds, spans, defs, labels = self.kinds, self.def_span, self.program.definitions, self.program.labels
        pre = {x for x in bound if x in kinds or x in spans or x in defs or x in labels}
        self._recording = [seg, n, len(self.diags), self.used, pre]
        self.used = set()
        return False

    def _segment_names(self, stmts) -> tuple[tuple, dict]:
        bound: dict = {}  # in the order they are bound
        external: dict = {}
        for stmt in stmts:
            old = self.memo.statements.get(id(stmt))
            if old is None and id(stmt) in self.origin:
                old = self.memo.statements.get(id(self.origin[id(stmt)]))
            for n in old.names if old is not None else _names(stmt):
                if n not in bound:
                    external[n] = None
            bound.update((t.id, None) for t in _bound(stmt))
        return tuple(external), bound

    def _finish_segment(self) -> None:
        seg, _left, n_diags, outer, pre = self._recording
        self._recording = None
        used, self.used = self.used, outer
        outer |= used
        diags = self.diags[n_diags:]
        if any(d.code == "DRG101" for d in diags):
            return  # a name used before it is bound: its hint weighs every defined name
        kinds, spans, defs, labels = self.kinds, self.def_span, self.program.definitions, self.program.labels
        fresh = [x for x in seg.bound if x not in pre]
        seg.kinds = {x: kinds[x] for x in fresh if x in kinds}
        seg.def_span = {x: spans[x] for x in fresh if x in spans}
        seg.definitions = {x: defs[x] for x in fresh if x in defs}
        seg.labels = {x: labels[x] for x in fresh if x in labels}
        seg.diags = diags
        seg.insts = self.program.instructions[seg.base :]
        seg.used = used
        self.memo.segments[id(seg.stmts[0])] = seg

    def _replay_segment(self, s: Segment) -> None:
        self.replayed += len(s.stmts)
        base = len(self.program.instructions)
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
        known = getattr(self, "known", None)  # the checker's index of names for "did you mean"
        if isinstance(known, _Deferred):
            known.deferred.extend(s.kinds)
        elif known is not None:
            for n in s.kinds:
                known.add(n)
        self.diags.extend(s.diags)
        self.program.instructions.extend(s.insts)
        self.used |= s.used


def check_incremental(stmts: list, memo: Memo | None, origin: dict | None = None):
    """(program, sorted diagnostics, memo for the next version) of parsed statements; `origin`:
    which statements only moved since the memo's version (see `incremental.parse_incremental`)."""
    memo = memo if memo is not None else Memo()
    memo.prune(stmts, origin or {})
    c = IncrementalChecker(memo, stmts, origin)
    program = c.run(ast.Script(_walk(stmts, memo.segments) if not c.extents else stmts))
    return program, sorted(c.diags, key=lambda d: (d.span.line, d.span.column)), memo
