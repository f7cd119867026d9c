"""The server's state and background work: documents, analyses, settings, diagnostics
(debounced per document), replay, CUDA source, build/verify/time and suggestions in
worker processes. What the client's commands answer is `commands.py`'s business.

Everything here runs on the server's event loop; anything that may take long runs
in a worker (`workers.Worker`) and its answer is tied to the document version it
was computed for: an answer for an older version is dropped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import traceback
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

from dragon_dsl.diagnostics import Diagnostic, Span
from dragon_dsl.levels import LEVELS

from dragon_lsp import __version__
from dragon_lsp.analysis import Analysis, ParseCache
from dragon_lsp.config import Settings, SettingsError, merge
from dragon_lsp.documents import MAX_CHARS, Document
from dragon_lsp.features.completion import TARGET_TAGS
from dragon_lsp.features.data import Edit, ReplayFacts
from dragon_lsp.tasks import NO_WORKLOAD
from dragon_lsp.workers import Worker, WorkerError, WorkerTimeout

log = logging.getLogger("dragon_lsp")


@dataclass
class Suggestion:
    title: str
    text: str
    figures: dict
    version: Optional[int]


@dataclass
class DocState:
    doc: Document
    analysis: Optional[Analysis] = None
    facts: Optional[ReplayFacts] = None
    replay_diags: tuple = (None, [])  # (version, diagnostics)
    measure_diags: tuple = (None, [])
    suggestions: tuple = (None, [])  # (version, [Suggestion])
    debounce: Optional[asyncio.Task] = None
    replay_task: Optional[asyncio.Task] = None
    published: Optional[int] = None  # the version last published
    tasks: set = field(default_factory=set)


class Session:
    def __init__(self, publish: Callable, notify: Callable, refresh: Callable,
                 apply_edit: Optional[Callable[..., Awaitable[bool]]] = None):
        """publish(uri, version, diagnostics, lines); notify(level, message); refresh(): ask the client to
        re-request inlay hints (replay facts arrived); `await apply_edit(uri, version, edits, lines)`: ask
        the client to apply edits to a document version, True when it did."""
        self.publish_cb, self.notify, self.refresh, self.apply_edit = publish, notify, refresh, apply_edit
        self.docs: dict[str, DocState] = {}
        self.cache = ParseCache()
        self.settings = Settings()
        self.encoding = "utf-16"
        self.analysis_worker = Worker("analysis")
        self.measure_worker = Worker("measure")
        self.blocks: dict[str, tuple[float, list[str]]] = {}  # workload path -> (mtime, names)
        self._background: set[asyncio.Task] = set()
        self._warned: set[str] = set()
        self._tags: Optional[list[str]] = None  # every target tag TVM knows (from a worker, once)
        self.internal_errors = 0

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

    def open(self, uri: str, text: str, version: Optional[int]) -> None:
        self.docs[uri] = DocState(Document(uri, text, version or 0))
        self.changed(uri, immediate=True)

    def change(self, uri: str, changes, version: Optional[int]) -> None:
        st = self.docs.get(uri)
        if st is None:
            return
        st.doc.apply(changes, version, self.encoding)
        st.analysis = None
        self.changed(uri)

    def close(self, uri: str) -> None:
        st = self.docs.pop(uri, None)
        if st is None:
            return
        for t in (st.debounce, st.replay_task, *st.tasks):
            if t is not None:
                t.cancel()
        self.publish_cb(uri, None, [], [""])

    def analysis(self, uri: str) -> Optional[Analysis]:
        """The analysis of the document's current version (computed on first use)."""
        st = self.docs.get(uri)
        if st is None:
            return None
        if st.analysis is None or st.analysis.version != st.doc.version:
            text = st.doc.text
            if len(text) > MAX_CHARS:
                text = ""
                self.warn_once(f"large:{uri}", f"{uri} is larger than {MAX_CHARS} characters: not analysed")
            st.analysis = Analysis(text, st.doc.version, self.cache)
        return st.analysis

    def facts(self, uri: str) -> Optional[ReplayFacts]:
        st = self.docs.get(uri)
        if st is None or st.facts is None or st.facts.version != st.doc.version:
            return None
        return st.facts

    def lines(self, uri: str) -> Optional[list[str]]:
        """The lines of a document's current version (as analysis reads them), or None when it is not open."""
        an = self.analysis(uri)
        return an.lines if an is not None else None

    def eol(self, uri: str) -> str:
        st = self.docs.get(uri)
        return "\r\n" if st is not None and "\r\n" in st.doc.text else "\n"

    def path(self, uri: str) -> Optional[str]:
        st = self.docs.get(uri)
        return st.doc.path if st is not None else None

    # -- diagnostics -----------------------------------------------------------------------------

    def changed(self, uri: str, immediate: bool = False) -> None:
        st = self.docs[uri]
        if st.debounce is not None:
            st.debounce.cancel()
        delay = 0.0 if immediate else self.settings.debounce_ms / 1000.0
        st.debounce = self.spawn(self._diagnose_later(uri, st.doc.version, delay))

    async def _diagnose_later(self, uri: str, version, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        st = self.docs.get(uri)
        if st is None or st.doc.version != version:
            return
        self.publish(uri)
        if st.replay_task is not None:
            st.replay_task.cancel()
        st.replay_task = self.spawn(self._replay_later(uri, version))

    def publish(self, uri: str) -> None:
        st = self.docs.get(uri)
        if st is None:
            return
        an = self.analysis(uri)
        v = st.doc.version
        diags = list(an.diagnostics)
        for ver, ds in (st.replay_diags, st.measure_diags):
            if ver == v:
                diags += ds
        st.published = v
        self.publish_cb(uri, v, diags, an.lines)

    # -- replay on the workload ---------------------------------------------------------------------

    async def _replay_later(self, uri: str, version) -> None:
        await asyncio.sleep(self.settings.replay_debounce_ms / 1000.0)
        st = self.docs.get(uri)
        if st is None or st.doc.version != version:
            return
        # Past the debounce, an edit no longer cancels the replay: stopping TVM means killing
        # its worker (and its warm caches). The answer for an old version is dropped instead.
        st.replay_task = None
        await self.replay(uri, version)

    async def replay(self, uri: str, version=None, script: bool = False) -> dict:
        """Replay a version (default: the current one) in the analysis worker; merge its diagnostics and
        facts while that version is current. Answers {"diagnostics", "version", "stale"} (and, with
        `script`, the scheduled module's TVMScript or None), {"skipped": why} or {"error": why}."""
        st = self.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        version = st.doc.version if version is None else version
        if st.doc.version != version:
            return {"skipped": "the document changed"}
        an = self.analysis(uri)
        if an.has_errors:
            return {"skipped": "the script has errors"}
        if self.workload_path(an, st.doc.path) is None:
            return {"skipped": NO_WORKLOAD}
        try:
            answer = await self.analysis_worker.call("replay_facts", an.text, st.doc.path, self.settings.workload,
                                                     version, script, timeout=self.settings.replay_timeout)
        except WorkerTimeout as exc:
            answer = {"diagnostics": [_whole(an, "DRG703", f"replay: {exc}")], "facts": None, "script": None}
        except WorkerError as exc:
            self.notify("error", f"replay failed: {exc}")
            return {"error": str(exc)}
        if "skipped" in answer:
            return {"skipped": NO_WORKLOAD if answer["skipped"] == "no workload" else answer["skipped"]}
        out = {"diagnostics": list(answer.get("diagnostics", [])), "version": version,
               "stale": st.doc.version != version or self.docs.get(uri) is not st}
        if script:
            out["script"] = answer.get("script")
        if out["stale"]:
            return out
        st.replay_diags = (version, out["diagnostics"])
        if answer.get("facts") is not None:
            st.facts = answer["facts"]
        self.publish(uri)
        self.refresh()
        if answer.get("workload"):
            self.spawn(self.load_blocks(answer["workload"]))
        return out

    def workload_path(self, an: Analysis, doc_path: Optional[str]) -> Optional[str]:
        if self.settings.workload:
            return self.settings.workload
        if an.program.workload:
            base = Path(doc_path).parent if doc_path else Path.cwd()
            return str(base / an.program.workload)
        return None

    async def load_blocks(self, path: str) -> list[str]:
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return []
        hit = self.blocks.get(path)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        try:
            names = await self.analysis_worker.call("workload_blocks", path, timeout=self.settings.replay_timeout)
        except WorkerError:
            names = []
        self.blocks[path] = (mtime, names)
        return names

    def known_blocks(self, uri: str) -> list[str]:
        an, st = self.analysis(uri), self.docs.get(uri)
        if an is None:
            return []
        path = self.workload_path(an, st.doc.path)
        if path is None:
            return []
        hit = self.blocks.get(path)
        if hit is None:
            self.spawn(self.load_blocks(path))
            return []
        return hit[1]

    def workload_files(self, uri: str) -> list[str]:
        path = self.path(uri)
        if not path:
            return []
        folder = Path(path).parent
        try:
            return sorted(p.name for p in folder.iterdir() if p.suffix == ".tvmscript")[:200]
        except OSError:
            return []

    # -- build, verify, time --------------------------------------------------------------------------

    def saved(self, uri: str) -> None:
        level = self.settings.check_on_save
        if level == "off" or uri not in self.docs:
            return
        if level == "replay":
            self.spawn(self.replay(uri))
        else:
            self.spawn(self.check(uri, level, quiet=True))

    async def check(self, uri: str, level: str, settings: Optional[Settings] = None, quiet: bool = False) -> dict:
        """Check the current version up to `level` (build, verify or time) in the measurement worker and
        publish what it finds. Answers {"level_reached", "figures", "diagnostics", "target", "device",
        "stale"}, {"skipped": why} or {"error": why}."""
        s = settings or self.settings
        st = self.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        if level not in LEVELS:
            return {"error": f"unknown level {level!r}; levels: {', '.join(LEVELS)}"}
        if LEVELS.index(level) <= LEVELS.index("replay"):
            return await self.replay(uri)
        an = self.analysis(uri)
        version = st.doc.version
        if an.has_errors:
            return {"skipped": "the script has errors"}
        target = s.target_for(an.program.target)
        try:
            device = s.engine_device()
        except SettingsError as exc:
            if quiet:
                self.warn_once(str(exc), str(exc))
            return {"error": str(exc)}
        try:
            answer = await self.measure_worker.call(
                "check_level", an.text, st.doc.path, s.workload, target, level, device, s.build_timeout,
                timeout=s.measure_timeout)
        except WorkerTimeout as exc:
            answer = {"diagnostics": [_whole(an, "DRG703", str(exc))], "figures": {}, "level_reached": None}
        except WorkerError as exc:
            self.notify("error", f"check at level {level} failed: {exc}")
            return {"error": str(exc)}
        if "unavailable" in answer:
            if quiet:
                self.warn_once("engine", f"build and verify on save are off: {answer['unavailable']}", "info")
            return {"error": answer["unavailable"]}
        stale = st.doc.version != version or self.docs.get(uri) is not st
        if not stale:
            # Replay findings are part of the answer: keep them apart from the core's own.
            core = {(d.code, d.span, d.message) for d in an.diagnostics}
            st.measure_diags = (version, [d for d in answer["diagnostics"] if (d.code, d.span, d.message) not in core])
            self.publish(uri)
        return {"level_reached": answer.get("level_reached"), "figures": answer.get("figures", {}),
                "diagnostics": list(answer.get("diagnostics", [])), "target": target, "device": device,
                "stale": stale}

    # -- CUDA source, targets -------------------------------------------------------------------------

    async def cuda_source(self, uri: str, target: Any) -> dict:
        """The CUDA source of the current version for `target`: {"source"} or {"error"} (with the
        replay's "diagnostics" when the replay failed)."""
        st = self.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        an = self.analysis(uri)
        if an.has_errors:
            return {"error": "the script has errors"}
        try:
            return await self.analysis_worker.call("cuda_source", an.text, st.doc.path, self.settings.workload,
                                                   target, timeout=self.settings.build_timeout)
        except WorkerError as exc:  # a timeout too: the worker was stopped
            return {"error": f"building the CUDA source failed: {exc}"}

    async def list_targets(self) -> dict:
        """Targets and devices for a picker: the ones in use first, then common ones, then every tag TVM knows."""
        targets: list[str] = []

        def add(t):
            if isinstance(t, dict):
                t = json.dumps(t)
            if isinstance(t, str) and t and t not in targets:
                targets.append(t)

        add(self.settings.target)
        for uri in list(self.docs):
            an = self.analysis(uri)
            if an is not None:
                add(an.program.target)
        for t in TARGET_TAGS:
            add(t)
        if self._tags is None:
            try:
                self._tags = await self.analysis_worker.call("target_tags", timeout=self.settings.replay_timeout)
            except WorkerError as exc:
                self.notify("warning", f"TVM's target tags: {exc}")
        for t in self._tags or ():
            add(t)
        devices = ["local", "cpu", "rpc"]
        try:
            device = self.settings.engine_device()
        except SettingsError:
            device = "local"
        if device != "local":
            devices.append(device)
        return {"targets": targets, "devices": devices}

    def status(self) -> dict:
        """The server's state, for `dragon/status` (tests, debugging)."""
        return {"version": __version__, "encoding": self.encoding, "internal_errors": self.internal_errors,
                "tvm_in_server": "tvm" in sys.modules, "documents": len(self.docs),
                "analysis_worker": self.analysis_worker.pid, "measure_worker": self.measure_worker.pid,
                "settings": self.settings.summary()}

    # -- suggestions ----------------------------------------------------------------------------------------

    async def suggest(self, uri: str, mode: str, report: Callable[[str, Optional[int]], None],
                      settings: Optional[Settings] = None, prompt: Optional[str] = None,
                      lines: Optional[tuple[int, int]] = None) -> dict:
        """Validated schedules for the current version ("suggest"), or only faster ones ("rewrite"), fastest
        first; they are offered as code actions while that version is current. Answers {"suggestions",
        "version", "stale", "candidates", "source"} or {"error"}; raises WorkerError, CancelledError."""
        s = settings or self.settings
        st = self.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        an = self.analysis(uri)
        version = st.doc.version
        if an.has_errors and mode == "rewrite":  # a suggestion only needs the header's workload
            return {"error": "the script has errors: fix them first"}
        target = s.target_for(an.program.target)
        try:
            device = s.engine_device()
        except SettingsError as exc:
            return {"error": str(exc)}
        options = {"trials": s.suggest_trials, "candidates": s.suggest_candidates, "builder": s.suggest_builder,
                   "modelPath": s.model_path, "timeout": s.build_timeout, "prompt": prompt, "lines": lines}
        answer = await self.measure_worker.call(
            "suggest", an.text, st.doc.path, s.workload, target, device, mode, options,
            timeout=s.suggest_timeout, progress=report)
        if "error" in answer:
            return answer
        found = []
        for c in answer.get("suggestions", []):
            found.append(Suggestion(_title(mode, c["figures"], answer.get("current"), c.get("source")), c["text"],
                                    c["figures"], version))
        if self.docs.get(uri) is st:
            st.suggestions = (version, found)
        return {"suggestions": found, "version": version, "stale": st.doc.version != version,
                "candidates": answer.get("candidates", 0), "source": answer.get("source")}

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

    async def replace_text(self, uri: str, version: Optional[int], text: str) -> bool:
        """Ask the client to replace the whole document, if it is still at `version`; True when it did."""
        st = self.docs.get(uri)
        if self.apply_edit is None or st is None or st.doc.version != version:
            return False
        an = self.analysis(uri)
        return bool(await self.apply_edit(uri, version, self.replacement(uri, text), an.lines))

    # -- tasks -------------------------------------------------------------------------------------------------

    def spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._background.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.internal_errors += 1
            self.notify("error", "internal error: " + "".join(traceback.format_exception(exc)))

    def shutdown(self) -> None:
        for t in list(self._background):
            t.cancel()
        self.analysis_worker.kill()
        self.measure_worker.kill()


def _whole(an: Analysis, code: str, message: str) -> Diagnostic:
    from dragon_dsl import diagnostics as dg

    span = an.program.instructions[0].span if an.program.instructions else Span(1, 1, 1, 1)
    return dg.make(code, span, message)


def _title(mode: str, figures: dict, current: Optional[dict], source: Optional[str]) -> str:
    lat = figures.get("latency_us")
    parts = [f"{lat:.1f} us" if lat is not None else "?"]
    if current and current.get("latency_us") and lat:
        parts.append(f"{current['latency_us'] / lat:.2f}x faster than now")
    if figures.get("speedup_vs_unscheduled"):
        parts.append(f"{figures['speedup_vs_unscheduled']:.1f}x vs unscheduled")
    if figures.get("speedup_vs_dlight"):
        parts.append(f"{figures['speedup_vs_dlight']:.2f}x vs dlight")
    head = "Rewrite" if mode == "rewrite" else "Use suggested schedule"
    via = " (search)" if source == "search" else ""
    return f"{head}{via}: {', '.join(parts)}"


def new_token() -> str:
    return f"dragon-{uuid.uuid4().hex[:12]}"
