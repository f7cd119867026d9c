"""The server's state: open documents, their analyses, what background work found for them
(replay and measurement diagnostics, replay facts, suggestions, each tied to the version it
was computed for), the settings and the workload's block names.

Nothing here waits: the work that produces those results (debounce, replay, build/verify/time,
CUDA source, suggestions, in worker processes) is `background.py`'s.
"""

from __future__ import annotations

import gc
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dragon_dsl import paused_gc
from dragon_dsl.language.diagnostics import Span
from dragon_lsp import __version__
from dragon_lsp.analysis import Analysis, EarlierAnalysis
from dragon_lsp.config import Settings, SettingsError, merge
from dragon_lsp.documents import MAX_CHARS, Document, normalize
from dragon_lsp.features.data import Edit, ReplayFacts


@dataclass
class Suggestion:
    title: str
    text: str
    figures: dict
    version: int | None


@dataclass
class DocState:
    doc: Document
    analysis: Analysis | None = None
    facts: ReplayFacts | None = None
    replay_diags: tuple = (None, [])  # (version, diagnostics)
    measure_diags: tuple = (None, [])
    suggestions: tuple = (None, [])  # (version, [Suggestion])
    published: int | None = None  # the version last published


class Session:
    def __init__(self, publish: Callable, notify: Callable):
        """publish(uri, version, diagnostics, lines); notify(level, message)."""
        self.publish_cb, self.notify = publish, notify
        self.docs: dict[str, DocState] = {}
        self.settings = Settings()
        self.encoding = "utf-16"
        self.blocks: dict[str, tuple[float, list[str]]] = {}  # workload path -> (mtime, names)
        self.tags: list[str] | None = None  # every target tag TVM knows (from a worker, once)
        self._warned: set[str] = set()
        self.internal_errors = 0
        self.workers: dict[str, Any] = {}  # name -> Worker (for status)

    # -- settings ---------------------------------------------------------------------------

    def configure(self, data: Any) -> None:
        """Take the `dragon` section (or part of it); report what was ignored."""
        self.settings = merge(self.settings, data)
        for p in self.settings.problems:
            self.warn_once(p, f"ignored setting {p}")
        try:
            self.settings.engine_device()
        except SettingsError as exc:
            self.warn_once(str(exc), str(exc))

    def settings_for(self, overrides: dict) -> Settings:
        """The settings of one command: the session's, with the target, device and tracker address
        its request carries. Raises SettingsError when one of those is invalid."""
        if not overrides:
            return self.settings
        s = merge(self.settings, overrides)
        if s.problems:
            raise SettingsError("; ".join(s.problems))
        return s

    def warn_once(self, key: str, message: str, level: str = "warning") -> None:
        if key not in self._warned:
            self._warned.add(key)
            self.notify(level, message)

    # -- documents ----------------------------------------------------------------------------

    def open(self, uri: str, text: str, version: int | None) -> DocState:
        self.docs[uri] = st = DocState(Document(uri, text, version or 0))
        return st

    def change(self, uri: str, changes, version: int | None) -> DocState | None:
        st = self.docs.get(uri)
        if st is not None:
            st.doc.apply(changes, version, self.encoding)
        return st

    def close(self, uri: str) -> DocState | None:
        st = self.docs.pop(uri, None)
        if st is not None:
            self.publish_cb(uri, None, [], [""])
        return st

    def analysis(self, uri: str) -> Analysis | None:
        """The analysis of the document's current version (computed on first use, reusing what the
        previous version's analysis found for the statements an edit left alone)."""
        st = self.docs.get(uri)
        if st is None:
            return None
        if st.analysis is None or st.analysis.version != st.doc.version:
            text = st.doc.text
            if len(text) > MAX_CHARS:
                text = ""
                self.warn_once(f"large:{uri}", f"{uri} is larger than {MAX_CHARS} characters: not analysed")
            # What lives now lives long (the statements, the check results): keep it out of the
            # collector's passes, which on a large document take as long as a keystroke may
            # (frozen before the collector runs again); `Background` collects once the user pauses.
            with paused_gc():
                st.analysis = Analysis(text, st.doc.version, previous=st.analysis)
                gc.freeze()
        return st.analysis

    def analysis_before(self, uri: str, pos, encoding: str | None = None):
        """(analysis, line, col) for a request that reads only the statements before a position
        (completion): the current version's analysis when it is computed. When it is not (a request
        right after a keystroke comes before the debounced analysis), the last analysis seen through
        the current lines, provided that every line before the statement at the position is unchanged
        since and no earlier statement ran into it: then what it says about those statements (their
        definitions, sections, instructions) is exactly what the current analysis would say, at no
        cost, where computing the current one re-checks the edit. Otherwise the current one, computed
        now. None when the document is not open."""
        from dragon_lsp import convert
        from dragon_lsp.features.context import statement_start

        st = self.docs.get(uri)
        if st is None:
            return None
        prev = st.analysis
        if prev is not None and prev.version != st.doc.version and len(st.doc.text) <= MAX_CHARS:
            lines = normalize(st.doc.text).split("\n")
            line, col = convert.from_position(lines, pos, encoding or self.encoding)
            first = statement_start(lines, line)
            before = prev.statement_at(first - 1) if first > 1 else None
            if (
                (before is None or before.span.end_line < first)
                and _same_definitions(prev, lines, first)
                and prev.mode_at(first) != "explain"
            ):  # the explanation graph's links name the whole program
                return EarlierAnalysis(prev, lines), line, col
        an = self.analysis(uri)
        return (an, *convert.from_position(an.lines, pos, encoding or self.encoding))

    def facts(self, uri: str) -> ReplayFacts | None:
        st = self.docs.get(uri)
        if st is None or st.facts is None or st.facts.version != st.doc.version:
            return None
        return st.facts

    def lines(self, uri: str) -> list[str] | None:
        """The lines of a document's current version (as analysis reads them), or None when it is not open."""
        an = self.analysis(uri)
        return an.lines if an is not None else None

    def eol(self, uri: str) -> str:
        st = self.docs.get(uri)
        return "\r\n" if st is not None and "\r\n" in st.doc.text else "\n"

    def path(self, uri: str) -> str | None:
        st = self.docs.get(uri)
        return st.doc.path if st is not None else None

    # -- diagnostics -----------------------------------------------------------------------------

    def current_diagnostics(self, uri: str) -> list:
        """The core's diagnostics of the current version, with the replay's and the measurement's when
        they were computed for it."""
        st = self.docs[uri]
        an = self.analysis(uri)
        diags = list(an.diagnostics)
        for ver, ds in (st.replay_diags, st.measure_diags):
            if ver == st.doc.version:
                diags += ds
        return diags

    def publish(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None:
            return
        diags = self.current_diagnostics(uri)
        st.published = st.doc.version
        self.publish_cb(uri, st.doc.version, diags, st.analysis.lines)

    # -- the workload -----------------------------------------------------------------------------

    def workload_path(self, an: Analysis, doc_path: str | None) -> str | None:
        if self.settings.workload:
            return self.settings.workload
        if an.program.workload:
            base = Path(doc_path).parent if doc_path else Path.cwd()
            return str(base / an.program.workload)
        return None

    def workload_of(self, uri: str) -> str | None:
        an, st = self.analysis(uri), self.docs.get(uri)
        return None if an is None else self.workload_path(an, st.doc.path)

    def known_blocks(self, uri: str) -> list[str] | None:
        """The block names of the document's workload when they were read, else None."""
        path = self.workload_of(uri)
        if path is None:
            return []
        hit = self.blocks.get(path)
        return None if hit is None else hit[1]

    def workload_files(self, uri: str) -> list[str]:
        path = self.path(uri)
        if not path:
            return []
        folder = Path(path).parent
        try:
            return sorted(p.name for p in folder.iterdir() if p.suffix == ".tvmscript")[:200]
        except OSError:
            return []

    # -- suggestions --------------------------------------------------------------------------------

    def suggestions(self, uri: str) -> list[Suggestion]:
        st = self.docs.get(uri)
        if st is None or st.suggestions[0] != st.doc.version:
            return []
        return st.suggestions[1]

    def replacement(self, uri: str, text: str) -> list[Edit]:
        an = self.analysis(uri)
        last = len(an.lines)
        new = text if self.eol(uri) == "\n" else text.replace("\n", "\r\n")
        return [Edit(Span(1, 1, last, len(an.lines[-1]) + 1), new)]

    def status(self) -> dict:
        """The server's state, for `dragon/status` (tests, debugging)."""
        out = {
            "version": __version__,
            "encoding": self.encoding,
            "internal_errors": self.internal_errors,
            "tvm_in_server": "tvm" in sys.modules,
            "documents": len(self.docs),
            "settings": self.settings.summary(),
        }
        for name, worker in self.workers.items():
            out[f"{name}_worker"] = worker.pid
        return out


def new_token() -> str:
    return f"dragon-{uuid.uuid4().hex[:12]}"


#: At most this many edited lines above a completion are compared statement by statement.
_MAX_EDITED = 8


def _same_definitions(prev: Analysis, lines: list[str], first: int) -> bool:
    """Whether the statements on lines 1..first-1 of `lines` define what those of `prev` define (the
    same names, kinds, lines and instructions): the lines are the same, or the few that differ are
    one-line instruction statements that keep their label, results and instruction and still parse
    (a keystroke in an argument: a tile decision, a factor)."""
    old = prev.lines
    if old[: first - 1] == lines[: first - 1]:
        return True
    if len(old) != len(lines):
        return False
    edited = [i for i in range(first - 1) if old[i] != lines[i]]
    if len(edited) > _MAX_EDITED:
        return False
    from dragon_dsl import Severity, parse
    from dragon_dsl.language.syntax import ast

    for i in edited:
        was = prev.statement_at(i + 1)
        if not isinstance(was, ast.CallStmt) or was.span.line != i + 1 or was.span.end_line != i + 1:
            return False
        script, diags = parse(lines[i])
        now = script.statements
        if any(d.severity is Severity.ERROR for d in diags) or len(now) != 1 or not isinstance(now[0], ast.CallStmt):
            return False
        now = now[0]
        if (now.call.func.id, [t.id for t in now.targets], now.label and now.label.id) != (
            was.call.func.id,
            [t.id for t in was.targets],
            was.label and was.label.id,
        ):
            return False
    return True
