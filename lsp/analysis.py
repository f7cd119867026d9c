"""One analysis per document version: parse, check and the indexes the features share.

Parsing and checking go through the language core. A document is parsed one
logical statement at a time, the way the core recovers from errors (a
well-formed first version on the core's fast path in one go): every statement
that the fast parser accepts skips Lark, and Lark only sees a broken statement.
A new version of a document reuses the previous version's statements and check
results for everything its edit left alone (`incremental.py`), so a keystroke
costs what it changed, not the document's size. A differential test holds the
diagnostics equal to `dragon_dsl.parse` + `dragon_dsl.language.check`'s.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from dragon_dsl import paused_gc
from dragon_dsl.language.check import BoundInst, ExplainEntry
from dragon_dsl.language.diagnostics import Diagnostic, Span
from dragon_dsl.language.syntax import ast
from dragon_dsl.language.table import BY_NAME, DIRECTIVES, EXPLAIN_KINDS, SECTIONS
from dragon_lsp.documents import normalize
from dragon_lsp.incremental import parse_incremental
from dragon_lsp.recheck import check_incremental

CONSTANTS = frozenset({"None", "True", "False", "inf", "nan"})


def parse_document(text: str) -> tuple[ast.Script, list[Diagnostic]]:
    """(Script, syntax diagnostics) of normalized text, statement by statement as `Analysis` parses a
    first version; never raises on text."""
    stmts, diags, _parsed, _origin = parse_incremental(text, None, None)
    return ast.Script(stmts), diags


@dataclass(frozen=True)
class Occurrence:
    name: str
    span: Span
    role: str  # def (result), label (an instruction's label), entry (explanation entry), use, link


def walk_names(e, bound: frozenset = frozenset()) -> Iterator[ast.Name]:
    """Names an expression refers to (not lambda parameters, not keyword or function names)."""
    stack = [(e, bound)]
    while stack:
        node, bound = stack.pop()
        if isinstance(node, ast.Name):
            if node.id not in bound and node.id not in CONSTANTS:
                yield node
        elif isinstance(node, (ast.ListExpr, ast.TupleExpr)):
            stack.extend((x, bound) for x in reversed(node.items))
        elif isinstance(node, ast.DictExpr):
            stack.extend((v, bound) for _k, v in reversed(node.items))
        elif isinstance(node, ast.Call):
            stack.extend((a.value, bound) for a in reversed(node.args))
        elif isinstance(node, ast.BinOp):
            stack.append((node.right, bound))
            stack.append((node.left, bound))
        elif isinstance(node, ast.Neg):
            stack.append((node.operand, bound))
        elif isinstance(node, ast.Lambda):
            stack.append((node.body, bound | {p.name for p in node.params}))


class Analysis:
    """A parsed and checked document version. Cheap indexes are built on first use."""

    def __init__(self, text: str, version: int | None = None, previous: Analysis | None = None):
        """`previous`: the analysis of the document's previous version, whose per-statement results
        are reused for what the edit left alone (`incremental.py`, `recheck.py`)."""
        self.version = version
        self.text = normalize(text)
        self.lines = self.text.split("\n")
        prior = previous if previous is not None and previous._parsed is not None else None
        with paused_gc():
            stmts, syntax, self._parsed, origin = parse_incremental(
                self.text, prior._parsed if prior else None, prior.text if prior else None
            )
            self.script = ast.Script(stmts)
            self.program, types, self._memo = check_incremental(stmts, prior._memo if prior else None, origin)
        self.diagnostics: list[Diagnostic] = syntax + types

    @property
    def has_errors(self) -> bool:
        return any(d.severity.value == "error" for d in self.diagnostics)

    # -- statements ----------------------------------------------------------------

    @cached_property
    def statements(self) -> list:
        return list(self.script.statements)

    def statement_at(self, line: int):
        """The statement whose lines include `line`, or None."""
        lo, hi = 0, len(self.statements)
        while lo < hi:  # statements are in source order
            mid = (lo + hi) // 2
            if self.statements[mid].span.end_line < line:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.statements) and self.statements[lo].span.line <= line <= self.statements[lo].span.end_line:
            return self.statements[lo]
        return None

    @cached_property
    def bound(self) -> dict[int, tuple[int, BoundInst]]:
        """id(statement) -> (instruction index, BoundInst)."""
        return {id(inst.stmt): (i, inst) for i, inst in enumerate(self.program.instructions)}

    @cached_property
    def entries(self) -> dict[str, ExplainEntry]:
        return {e.name: e for e in self.program.explain if e.name}

    def mode_at(self, line: int) -> str:
        """header, body, postproc or explain: where a statement on `line` would be."""
        mode = "header"
        for stmt in self.statements:
            if stmt.span.line >= line:
                break
            if isinstance(stmt, ast.Section):
                mode = stmt.name.id if stmt.name.id in SECTIONS or stmt.name.id == "explain" else mode
            elif isinstance(stmt, ast.CallStmt) and mode == "header":
                mode = "body"
        return mode

    # -- names ------------------------------------------------------------------------

    @cached_property
    def occurrences(self) -> dict[str, list[Occurrence]]:
        out: dict[str, list[Occurrence]] = {}

        def add(name: ast.Name, role: str):
            out.setdefault(name.id, []).append(Occurrence(name.id, name.span, role))

        mode = "header"
        for stmt in self.statements:
            if isinstance(stmt, ast.Section):
                mode = "explain" if stmt.name.id == "explain" else "body"
                continue
            if not isinstance(stmt, ast.CallStmt):
                continue
            if mode == "explain":
                for t in stmt.targets:
                    add(t, "entry")
                for arg in stmt.call.args:
                    if arg.name is not None and (arg.name.id in ("about", "because", "produces", "of")):
                        for n in walk_names(arg.value):
                            add(n, "link")
                continue
            mode = "body"
            if stmt.label is not None:
                add(stmt.label, "label")
            for arg in stmt.call.args:
                for n in walk_names(arg.value):
                    add(n, "use")
            for t in stmt.targets:
                if t.id != "_":
                    add(t, "def")
        for occs in out.values():
            occs.sort(key=lambda o: (o.span.line, o.span.column))
        return out

    @cached_property
    def _by_line(self) -> dict[int, list[Occurrence]]:
        idx: dict[int, list[Occurrence]] = {}
        for occs in self.occurrences.values():
            for o in occs:
                idx.setdefault(o.span.line, []).append(o)
        return idx

    def occurrence_at(self, line: int, col: int) -> Occurrence | None:
        for o in self._by_line.get(line, ()):
            if o.span.column <= col <= o.span.end_column and o.span.line == o.span.end_line:
                return o
        return None

    def definition(self, name: str) -> tuple[str, Span] | None:
        """(what, span) where a name is defined: a result, a label or an explanation entry."""
        d = self.program.definitions.get(name)
        if d is not None:
            return d[0], d[1]
        for o in self.occurrences.get(name, ()):
            if o.role in ("label", "entry"):
                return o.role, o.span
        return None

    def defining_instruction(self, name: str) -> tuple[int, BoundInst] | None:
        d = self.program.definitions.get(name)
        if d is None:
            for i, inst in enumerate(self.program.instructions):
                if inst.label == name:
                    return i, inst
            return None
        idx = d[2]
        if 0 <= idx < len(self.program.instructions):
            return idx, self.program.instructions[idx]
        return None

    def visible(self, line: int, kinds: tuple[str, ...]) -> list[tuple[str, str, Span]]:
        """Variables of the given kinds defined on a line before `line` (what a use there may name)."""
        out = []
        for name, (kind, span, _idx) in self.program.definitions.items():
            if kind in kinds and span.line < line:
                out.append((name, kind, span))
        out.sort(key=lambda t: (t[2].line, t[2].column))
        return out

    def nearest_visible(
        self, line: int, kinds: tuple[str, ...], prefix: str | None, limit: int
    ) -> tuple[list[tuple[str, str, Span]], bool]:
        """`visible(line, kinds)` when it has at most `limit` entries; else those starting with `prefix`,
        the `limit` nearest before `line` (and True: some were left out). Walks back from `line` over
        the definitions, which the checker records in source order, so a large script costs what
        is offered, not every definition."""
        items = list(self.program.definitions.items())
        hi = bisect.bisect_left(items, line, key=lambda it: it[1][1].line)

        def nearest(test) -> list:
            out = []
            for k in range(hi - 1, -1, -1):
                name, (kind, span, _idx) = items[k]
                if kind in kinds and test(name):
                    out.append((name, kind, span))
                    if len(out) > limit:
                        break
            out.reverse()
            return out

        found = nearest(lambda _name: True)
        if len(found) <= limit:
            return found, False
        if prefix:
            found = nearest(lambda name: name.startswith(prefix))
        return (found[-limit:], True) if len(found) > limit else (found, False)

    def close_names(self, name: str, line: int, kinds=("block", "loop", "value"), n: int = 3) -> list[str]:
        return difflib.get_close_matches(name, [v[0] for v in self.visible(line, kinds)], n=n)

    # -- explanation graph --------------------------------------------------------------

    def notes_for(self, name: str) -> list[ExplainEntry]:
        """Explanation entries about a variable or a label (directly, or through its instruction)."""
        found = self.defining_instruction(name)
        keys = {name}
        if found is not None:
            _i, inst = found
            keys |= set(inst.outputs) - {"_"}
            if inst.label:
                keys.add(inst.label)
        out = []
        rationales = set()
        for e in self.program.explain:
            linked = set()
            for k, names in e.links.items():
                if k in ("about", "produces"):
                    linked |= set(names)
            if linked & keys:
                out.append(e)
                if e.kind == "rationale" and e.name:
                    rationales.add(e.name)
        for e in self.program.explain:
            if e.kind == "effect" and set(e.links.get("of", ())) & rationales and e not in out:
                out.append(e)
        return out


class EarlierAnalysis:
    """An earlier version's analysis read with the current version's lines. Only for what lies
    before a line that the edits since left alone with everything above it
    (`Session.analysis_before` decides): there it answers as the current analysis would."""

    def __init__(self, analysis: Analysis, lines: list[str]):
        self.analysis, self.lines = analysis, lines

    def __getattr__(self, name: str):
        return getattr(self.analysis, name)


def is_reserved(name: str) -> bool:
    from dragon_dsl.language.table import RESERVED

    return (
        name in RESERVED
        or name in BY_NAME
        or name in SECTIONS
        or name in DIRECTIVES
        or name in EXPLAIN_KINDS
        or name == "explain"
    )
