"""The server's background work over the session's state: diagnostics (debounced per
document), replay, build/verify/time, CUDA source, target tags and suggestions, the slow
ones in worker processes (`workers.Worker`, the functions of `tasks.py`).

Everything here runs on the server's event loop and never waits on TVM itself; a
worker's answer is tied to the document version it was computed for and stored in
the session only while that version is current (an answer for an older one is dropped).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dragon_dsl.language.diagnostics import Diagnostic, Span
from dragon_dsl.levels import LEVELS
from dragon_lsp.analysis import Analysis
from dragon_lsp.config import Settings, SettingsError
from dragon_lsp.features.completion import TARGET_TAGS
from dragon_lsp.session import Session, Suggestion
from dragon_lsp.tasks import NO_WORKLOAD
from dragon_lsp.workers import Worker, WorkerError, WorkerTimeout

#: Seconds without a change after which the server collects garbage (see `Background._collect_when_idle`).
IDLE_COLLECT_S = 5.0


@dataclass
class Jobs:
    """The tasks running for one document."""

    debounce: asyncio.Task | None = None
    replay: asyncio.Task | None = None
    others: set = field(default_factory=set)

    def cancel(self) -> None:
        for t in (self.debounce, self.replay, *self.others):
            if t is not None:
                t.cancel()


class Background:
    def __init__(
        self,
        session: Session,
        publish: Callable,
        notify: Callable,
        refresh: Callable,
        apply_edit: Callable[..., Awaitable[bool]] | None = None,
    ):
        """refresh(): ask the client to re-request inlay hints (replay facts arrived); `await apply_edit(uri,
        version, edits, lines)`: ask the client to apply edits to a document version, True when it did."""
        self.session, self.notify, self.refresh, self.apply_edit = session, notify, refresh, apply_edit
        self.analysis_worker = Worker("analysis")
        self.measure_worker = Worker("measure")
        session.workers.update(analysis=self.analysis_worker, measure=self.measure_worker)
        self.jobs: dict[str, Jobs] = {}
        self._tasks: set[asyncio.Task] = set()
        self._collector: asyncio.Task | None = None

    # -- documents: diagnostics after a pause, then a replay -----------------------------------------

    def opened(self, uri: str) -> None:
        self.jobs[uri] = Jobs()
        self.changed(uri, immediate=True)

    def closed(self, uri: str) -> None:
        jobs = self.jobs.pop(uri, None)
        if jobs is not None:
            jobs.cancel()

    def changed(self, uri: str, immediate: bool = False) -> None:
        st = self.session.docs.get(uri)
        if st is None:
            return
        jobs = self.jobs.setdefault(uri, Jobs())
        if jobs.debounce is not None:
            jobs.debounce.cancel()
        delay = 0.0 if immediate else self.session.settings.debounce_ms / 1000.0
        jobs.debounce = self.spawn(self._diagnose_later(uri, st.doc.version, delay))

    async def _diagnose_later(self, uri: str, version, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        st = self.session.docs.get(uri)
        if st is None or st.doc.version != version:
            return
        self.session.publish(uri)
        jobs = self.jobs.setdefault(uri, Jobs())
        if jobs.replay is not None:
            jobs.replay.cancel()
        jobs.replay = self.spawn(self._replay_later(uri, version))
        self._collect_when_idle()

    def _collect_when_idle(self) -> None:
        """A full garbage collection once no document changed for IDLE_COLLECT_S (analyses freeze what
        they keep, see `Session.analysis`; this frees the cycles among what died since)."""
        if self._collector is not None:
            self._collector.cancel()
        self._collector = self.spawn(self._collect_later())

    async def _collect_later(self) -> None:
        await asyncio.sleep(IDLE_COLLECT_S)
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    async def _replay_later(self, uri: str, version) -> None:
        await asyncio.sleep(self.session.settings.replay_debounce_ms / 1000.0)
        st = self.session.docs.get(uri)
        if st is None or st.doc.version != version:
            return
        # Past the debounce, an edit no longer cancels the replay: stopping TVM means killing
        # its worker (and its warm caches). The answer for an old version is dropped instead.
        self.jobs[uri].replay = None
        await self.replay(uri, version)

    # -- replay on the workload ---------------------------------------------------------------------

    async def replay(self, uri: str, version=None, script: bool = False) -> dict:
        """Replay a version (default: the current one) in the analysis worker; merge its diagnostics and
        facts while that version is current. Answers {"diagnostics", "version", "stale"} (and, with
        `script`, the scheduled module's TVMScript or None), {"skipped": why} or {"error": why}."""
        session = self.session
        st = session.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        version = st.doc.version if version is None else version
        if st.doc.version != version:
            return {"skipped": "the document changed"}
        an = session.analysis(uri)
        if an.has_errors:
            return {"skipped": "the script has errors"}
        if session.workload_path(an, st.doc.path) is None:
            return {"skipped": NO_WORKLOAD}
        try:
            answer = await self.analysis_worker.call(
                "replay_facts",
                an.text,
                st.doc.path,
                session.settings.workload,
                version,
                script,
                timeout=session.settings.replay_timeout,
            )
        except WorkerTimeout as exc:
            answer = {"diagnostics": [_whole(an, "DRG703", f"replay: {exc}")], "facts": None, "script": None}
        except WorkerError as exc:
            self.notify("error", f"replay failed: {exc}")
            return {"error": str(exc)}
        if "skipped" in answer:
            return {"skipped": NO_WORKLOAD if answer["skipped"] == "no workload" else answer["skipped"]}
        out = {
            "diagnostics": list(answer.get("diagnostics", [])),
            "version": version,
            "stale": st.doc.version != version or session.docs.get(uri) is not st,
        }
        if script:
            out["script"] = answer.get("script")
        if out["stale"]:
            return out
        st.replay_diags = (version, out["diagnostics"])
        if answer.get("facts") is not None:
            st.facts = answer["facts"]
        session.publish(uri)
        self.refresh()
        if answer.get("workload"):
            self.spawn(self.load_blocks(answer["workload"]))
        return out

    async def load_blocks(self, path: str) -> list[str]:
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return []
        hit = self.session.blocks.get(path)
        if hit is not None and hit[0] == mtime:
            return hit[1]
        try:
            names = await self.analysis_worker.call(
                "workload_blocks", path, timeout=self.session.settings.replay_timeout
            )
        except WorkerError:
            names = []
        self.session.blocks[path] = (mtime, names)
        return names

    def blocks(self, uri: str) -> list[str]:
        """The block names of the document's workload; when they were not read yet, [] (and read them)."""
        names = self.session.known_blocks(uri)
        if names is None:
            self.spawn(self.load_blocks(self.session.workload_of(uri)))
            return []
        return names

    # -- build, verify, time --------------------------------------------------------------------------

    def saved(self, uri: str) -> None:
        level = self.session.settings.check_on_save
        if level == "off" or uri not in self.session.docs:
            return
        if level == "replay":
            self.spawn(self.replay(uri))
        else:
            self.spawn(self.check(uri, level, quiet=True))

    async def check(self, uri: str, level: str, settings: Settings | None = None, quiet: bool = False) -> dict:
        """Check the current version up to `level` (build, verify or time) in the measurement worker and
        publish what it finds. Answers {"level_reached", "figures", "diagnostics", "target", "device",
        "stale"}, {"skipped": why} or {"error": why}."""
        session = self.session
        s = settings or session.settings
        st = session.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        if level not in LEVELS:
            return {"error": f"unknown level {level!r}; levels: {', '.join(LEVELS)}"}
        if LEVELS.index(level) <= LEVELS.index("replay"):
            return await self.replay(uri)
        an = session.analysis(uri)
        version = st.doc.version
        if an.has_errors:
            return {"skipped": "the script has errors"}
        target = s.target_for(an.program.target)
        try:
            device = s.engine_device()
        except SettingsError as exc:
            if quiet:
                session.warn_once(str(exc), str(exc))
            return {"error": str(exc)}
        try:
            answer = await self.measure_worker.call(
                "check_level",
                an.text,
                st.doc.path,
                s.workload,
                target,
                level,
                device,
                s.build_timeout,
                timeout=s.measure_timeout,
            )
        except WorkerTimeout as exc:
            answer = {"diagnostics": [_whole(an, "DRG703", str(exc))], "figures": {}, "level_reached": None}
        except WorkerError as exc:
            self.notify("error", f"check at level {level} failed: {exc}")
            return {"error": str(exc)}
        stale = st.doc.version != version or session.docs.get(uri) is not st
        if not stale:
            # Replay findings are part of the answer: keep them apart from the core's own.
            core = {(d.code, d.span, d.message) for d in an.diagnostics}
            st.measure_diags = (version, [d for d in answer["diagnostics"] if (d.code, d.span, d.message) not in core])
            session.publish(uri)
        return {
            "level_reached": answer.get("level_reached"),
            "figures": answer.get("figures", {}),
            "diagnostics": list(answer.get("diagnostics", [])),
            "target": target,
            "device": device,
            "stale": stale,
        }

    # -- CUDA source, targets -------------------------------------------------------------------------

    async def cuda_source(self, uri: str, target: Any) -> dict:
        """The CUDA source of the current version for `target`: {"source"} or {"error"} (with the
        replay's "diagnostics" when the replay failed)."""
        session = self.session
        st = session.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        an = session.analysis(uri)
        if an.has_errors:
            return {"error": "the script has errors"}
        try:
            return await self.analysis_worker.call(
                "cuda_source",
                an.text,
                st.doc.path,
                session.settings.workload,
                target,
                timeout=session.settings.build_timeout,
            )
        except WorkerError as exc:  # a timeout too: the worker was stopped
            return {"error": f"building the CUDA source failed: {exc}"}

    async def list_targets(self) -> dict:
        """Targets and devices for a picker: the ones in use first, then common ones, then every tag TVM knows."""
        session = self.session
        targets: list[str] = []

        def add(t):
            if isinstance(t, dict):
                t = json.dumps(t)
            if isinstance(t, str) and t and t not in targets:
                targets.append(t)

        add(session.settings.target)
        for uri in list(session.docs):
            an = session.analysis(uri)
            if an is not None:
                add(an.program.target)
        for t in TARGET_TAGS:
            add(t)
        if session.tags is None:
            try:
                session.tags = await self.analysis_worker.call("target_tags", timeout=session.settings.replay_timeout)
            except WorkerError as exc:
                self.notify("warning", f"TVM's target tags: {exc}")
        for t in session.tags or ():
            add(t)
        devices = ["local", "cpu", "rpc"]
        try:
            device = session.settings.engine_device()
        except SettingsError:
            device = "local"
        if device != "local":
            devices.append(device)
        return {"targets": targets, "devices": devices}

    # -- suggestions ----------------------------------------------------------------------------------------

    async def suggest(
        self,
        uri: str,
        mode: str,
        report: Callable[[str, int | None], None],
        settings: Settings | None = None,
        prompt: str | None = None,
        lines: tuple[int, int] | None = None,
    ) -> dict:
        """Validated schedules for the current version ("suggest"), or only faster ones ("rewrite"), fastest
        first; they are offered as code actions while that version is current. Answers {"suggestions",
        "version", "stale", "candidates", "source"} or {"error"}; raises WorkerError, CancelledError."""
        session = self.session
        s = settings or session.settings
        st = session.docs.get(uri)
        if st is None:
            return {"error": "the document is not open"}
        an = session.analysis(uri)
        version = st.doc.version
        if an.has_errors and mode == "rewrite":  # a suggestion only needs the header's workload
            return {"error": "the script has errors: fix them first"}
        target = s.target_for(an.program.target)
        try:
            device = s.engine_device()
        except SettingsError as exc:
            return {"error": str(exc)}
        options = {
            "trials": s.suggest_trials,
            "candidates": s.suggest_candidates,
            "builder": s.suggest_builder,
            "modelPath": s.model_path,
            "timeout": s.build_timeout,
            "prompt": prompt,
            "lines": lines,
        }
        answer = await self.measure_worker.call(
            "suggest",
            an.text,
            st.doc.path,
            s.workload,
            target,
            device,
            mode,
            options,
            timeout=s.suggest_timeout,
            progress=report,
        )
        if "error" in answer:
            return answer
        found = [
            Suggestion(
                _title(mode, c["figures"], answer.get("current"), c.get("source")), c["text"], c["figures"], version
            )
            for c in answer.get("suggestions", [])
        ]
        if session.docs.get(uri) is st:
            st.suggestions = (version, found)
        return {
            "suggestions": found,
            "version": version,
            "stale": st.doc.version != version,
            "candidates": answer.get("candidates", 0),
            "source": answer.get("source"),
        }

    async def replace_text(self, uri: str, version: int | None, text: str) -> bool:
        """Ask the client to replace the whole document, if it is still at `version`; True when it did."""
        st = self.session.docs.get(uri)
        if self.apply_edit is None or st is None or st.doc.version != version:
            return False
        an = self.session.analysis(uri)
        return bool(await self.apply_edit(uri, version, self.session.replacement(uri, text), an.lines))

    # -- tasks -------------------------------------------------------------------------------------------------

    def spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.session.internal_errors += 1
            self.notify("error", "internal error: " + "".join(traceback.format_exception(exc)))

    def shutdown(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        self.analysis_worker.kill()
        self.measure_worker.kill()


def _whole(an: Analysis, code: str, message: str) -> Diagnostic:
    from dragon_dsl.language import diagnostics as dg

    span = an.program.instructions[0].span if an.program.instructions else Span(1, 1, 1, 1)
    return dg.make(code, span, message)


def _title(mode: str, figures: dict, current: dict | None, source: str | None) -> str:
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
