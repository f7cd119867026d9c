"""One call of the engine (`Engine.run`) as a small state machine: results-cache hits,
duplicates, the verifier's references, builds, then device runs; and the mapping of
every worker reply (including timeouts and crashes) to a Result.

Each result is settled once (`Batch._settle`): stored in the results cache, handed to the
call's `on_result` callback at once (a caller can write it out before the call ends), and
copied to the candidates whose program turned out identical (with
`Engine(dedupe_sources=True)`: the build worker that claims a program first builds it, the
others reply "duplicate" and wait for its result; a build claims the scheduled module, then, for
GPU targets, its lowered source, so one candidate can hold the first claim and find the second
taken: it gets that result, and so do its own copies; one whose first build never said its
source, a timeout or a crash, is built again alone). Every reply's phase timings go into
the engine's profile.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from dragon_dsl.engine import keys
from dragon_dsl.engine.pool import Dispatcher
from dragon_dsl.engine.reference import config_key
from dragon_dsl.engine.result import EngineError, Result, Status, Task, failed_stage, level_rank
from dragon_dsl.engine.timing import flush_bytes, median

#: the trace of no instructions: the workload as written, scheduled by nothing
EMPTY_TRACE_HASH = keys.trace_hash([[], []])


@dataclass
class Item:
    """One distinct measurement in a call: a task, what to build, and where its result goes."""

    task: Task
    source: dict
    workload: keys.Workload
    thash: str
    indices: list = field(default_factory=list)
    result: Result | None = None
    build_s: float | None = None
    artifact: str | None = None
    entry: str = "main"  # the artifact's function for this item (a group's library has several)
    source_keys: list = field(
        default_factory=list
    )  # its program's claim keys (dedupe_sources), once its build said them
    dups: list = field(default_factory=list)  # items whose source is identical: they get a copy of the result


class Batch:
    """The state of one `Engine.run`: cache hits, references, builds, runs."""

    def __init__(self, engine, pairs, on_result=None):
        self.e = engine
        self.on_result = on_result
        self.results: list = [None] * len(pairs)
        self.items: list = []
        self.failed_refs: dict = {}
        by_key: dict = {}
        for index, (task, source) in enumerate(pairs):
            wl = engine._workload(task.workload)
            thash = keys.trace_hash(source.get("trace", task.trace))
            key = (wl.hash, thash, task.level, task.seeds, tuple(sorted(task.timing_config().items())))
            if key in by_key:
                by_key[key].indices.append(index)
                continue
            item = Item(task, source, wl, thash, [index])
            by_key[key] = item
            if task.use_cache and engine.cache is not None:
                item.result = engine.cache.lookup(
                    wl.hash, thash, engine.target.key, engine.device_key, task, engine.limits()
                )
            self.items.append(item)
        self._users: dict = {}  # artifact -> items that still need it
        self.pending_builds = 0
        self.pending_refs = 0
        self.held: list = []  # items built, waiting for a reference or for the builds to end
        self.overlap = engine.target.is_gpu or engine.device.is_remote
        self.dedupe = bool(getattr(engine, "dedupe_sources", False))
        self._owners: dict = {}  # source key -> the item that builds it
        self._parked: dict = {}  # source key -> duplicates whose owner has not replied yet

    def run(self) -> list:
        t0 = time.perf_counter()
        self._builds_done = None
        for item in self.items:
            if item.result is not None:  # a results-cache hit
                self._settle(item, item.result)
        todo = [it for it in self.items if it.result is None]
        verify = [it for it in todo if level_rank(it.task.level) >= level_rank("verify")]
        dispatcher = Dispatcher([self.e._builders])
        dispatcher.timeline = self.e.timeline  # None unless the caller asked for one
        self.dispatcher = dispatcher
        if verify:
            self.devices = self.e._device_pool()
            for wl_hash, seeds in sorted({(it.workload.hash, it.task.seeds) for it in verify}):
                wl = next(it.workload for it in verify if it.workload.hash == wl_hash)
                self._reference(wl, seeds)
        for group in self._groups(todo):
            if len(group) == 1:
                self._build(group[0])
            else:
                self._build_group(group)
        dispatcher.run()
        while self._parked:  # duplicates of a source whose first build never said it
            orphans = [it for items in self._parked.values() for it in items]
            self._parked = {}
            for item in orphans:
                self._build(item, claim=False)
            dispatcher.run()
        self._finish()
        self.e._add_profile({"wall": time.perf_counter() - t0})
        if self._builds_done is not None:
            self.e._add_profile({"build_span": self._builds_done - t0})
        self.e._add_profile({"main": dispatcher.callback_s})
        if self.failed_refs:
            raise EngineError(
                "; ".join(
                    f"the unscheduled workload {h} failed as a reference on llvm: {m}"
                    for h, m in self.failed_refs.items()
                )
            )
        return self.results

    # --- references -----------------------------------------------------------------------
    def _reference(self, wl: keys.Workload, seeds: int) -> None:
        if self.e._known_reference(wl, seeds) is not None:
            return
        self.pending_refs += 1

        def done(message):
            self.pending_refs -= 1
            if message is not None:
                self.failed_refs[wl.hash] = message
            self._release()

        self.e._submit_reference(self.dispatcher, wl, seeds, done)

    # --- builds -----------------------------------------------------------------------------
    def _groups(self, todo: list) -> list:
        """The builds to submit: the items of each workload (in the order they came) cut into
        groups of `group_sizes`, decided over the whole call."""
        by_workload: dict = {}
        for item in todo:
            by_workload.setdefault(item.workload.hash, []).append(item)
        groups = []
        cuts = group_sizes([len(items) for items in by_workload.values()], self.e.workers, self.e.build_group)
        for items, sizes in zip(by_workload.values(), cuts):
            start = 0
            for size in sizes:
                groups.append(items[start : start + size])
                start += size
        return groups

    def _claim(self, item: Item) -> dict:
        """The job's claim ({"dir", "tag"}): the tag is the measurement's configuration, so that
        only candidates measured alike share a result."""
        tag = keys.trace_hash([item.task.level, item.task.seeds, sorted(item.task.timing_config().items())])[:12]
        return {"dir": str(self.e._claim_dir()), "tag": tag}

    def _build(self, item: Item, claim: bool = True) -> None:
        self.pending_builds += 1
        out = self.e._next_dir("build")

        def done(reply):
            self.pending_builds -= 1
            self._built(item, reply, out, {})
            self._release()

        self.e.build_jobs += 1
        job = {
            "op": "build",
            "wkey": item.workload.hash,
            "workload": item.workload.text,
            "source": item.source,
            "out": str(out),
        }
        if self.dedupe and claim:
            job["claim"] = self._claim(item)
        self.dispatcher.submit(self.e._builders, job, self.e.timeout_s, done)

    def _build_group(self, items: list) -> None:
        """One build job for several candidates of one workload (build.build_group). A job that
        times out or kills its worker says nothing of which candidate did it: each is built again
        alone, with its own timeout."""
        self.pending_builds += len(items)
        out = self.e._next_dir("build")
        users: dict = {}  # the group's artifact -> how many items still need it

        def done(reply):
            self.pending_builds -= len(items)
            replies = reply.get("replies") if reply.get("status") == "ok" else None
            if replies is None or len(replies) != len(items):
                shutil.rmtree(out, ignore_errors=True)
                for item in items:  # alone, without a claim: the group's claims may be theirs already
                    self._build(item, claim=False)
                return
            for _item, one in zip(items, replies):
                if one.get("status") == "ok":
                    users[one["artifact"]] = users.get(one["artifact"], 0) + 1
            for item, one in zip(items, replies):
                self._built(item, one, out, users)
            self._release()

        self.e.build_jobs += 1
        job = {
            "op": "build_group",
            "wkey": items[0].workload.hash,
            "workload": items[0].workload.text,
            "sources": [it.source for it in items],
            "out": str(out),
        }
        if self.dedupe:
            job["claim"] = self._claim(items[0])  # one workload; tags differ only across configurations
            if len({self._claim(it)["tag"] for it in items}) > 1:
                del job["claim"]
        self.dispatcher.submit(self.e._builders, job, self.e.timeout_s * len(items), done)

    def _built(self, item: Item, reply: dict, out: Path, users: dict) -> None:
        """Record one build reply. USERS counts the items sharing an artifact (a group's); the
        artifact's folder goes when its last item is done with it."""
        item.build_s = reply.get("build_s")
        self._builds_done = time.perf_counter()
        self.e._add_profile(reply.get("phases"))
        for key in reply.get("claimed") or []:  # this build's program: its copies get its result
            item.source_keys.append(key)
            self._owners[key] = item
            item.dups.extend(self._parked.pop(key, []))
        if reply.get("status") == "duplicate":
            self._duplicate(item, reply.get("source_key"))
            if not users:
                shutil.rmtree(out, ignore_errors=True)
            return
        if reply.get("status") == "ok":
            item.artifact = reply["artifact"]
            item.entry = reply.get("entry", "main")
            self._users.setdefault(item.artifact, users.get(item.artifact, 1))  # set once per artifact
            if item.task.level == "build":
                self._settle(item, Result(Status.OK, "", build_s=item.build_s, level="build"))
                self._done_with(item.artifact)
            else:
                self.held.append(item)
        else:
            self._settle(item, build_failure(reply))
            if not users:
                shutil.rmtree(out, ignore_errors=True)

    def _duplicate(self, item: Item, key: str) -> None:
        """ITEM's source was claimed by another build: it gets that build's result, now or later."""
        self.e.duplicate_sources += 1
        owner = self._owners.get(key)
        done = self.e._sources.get(key)
        if owner is not None and owner.result is None:
            owner.dups.append(item)
        elif owner is not None or done is not None:
            first = owner.result if owner is not None else done
            self._settle(item, self._copy(first))
        else:
            self._parked.setdefault(key, []).append(item)

    @staticmethod
    def _copy(result: Result) -> Result:
        return replace(
            result,
            duplicate_of=result.duplicate_of or result.trace_hash,
            cached=False,
            latencies_us=list(result.latencies_us),
        )

    def _settle(self, item: Item, result: Result) -> None:
        """ITEM's final result: stored in the cache, handed to `on_result`, copied to its duplicates."""
        item.result = result
        result.trace_hash = item.thash
        fresh = not result.cached
        if fresh and self.e.cache is not None and item.workload.hash not in self.failed_refs:
            self.e.cache.store(
                item.workload.hash,
                item.thash,
                self.e.target.key,
                self.e.device_key,
                item.task,
                replace(result, duplicate_of=""),
                self.e.limits(),
            )
        for n, index in enumerate(item.indices):
            self.results[index] = result if n == 0 else replace(result, cached=True)
            if self.on_result is not None:
                self.on_result(index, self.results[index])
        for key in item.source_keys:  # a later call's copies of this program get it too
            self.e._sources[key] = result
        dups, item.dups = item.dups, []
        for dup in dups:
            self._settle(dup, self._copy(result))

    def _done_with(self, artifact: str) -> None:
        """One item no longer needs ARTIFACT: its folder goes with the last one."""
        self._users[artifact] -= 1
        if self._users[artifact] <= 0:
            del self._users[artifact]
            shutil.rmtree(Path(artifact).parent, ignore_errors=True)

    def _release(self) -> None:
        """Send built items to the device once their reference exists (and, for CPUs, once no build runs)."""
        if not self.overlap and (self.pending_builds or self.pending_refs):
            return
        waiting = []
        for item in self.held:
            ref = self.e._references.get((item.workload.hash, config_key(item.task.seeds)))
            if ref is None and item.workload.hash in self.failed_refs:
                self._settle(
                    item,
                    Result(
                        Status.BUILD_ERROR,
                        "no reference: " + self.failed_refs[item.workload.hash],
                        build_s=item.build_s,
                        level="build",
                    ),
                )
            elif ref is None:
                waiting.append(item)
            else:
                self._submit_run(item, ref)
        self.held = waiting

    # --- runs -------------------------------------------------------------------------------
    def _submit_run(self, item: Item, ref: str) -> None:
        task = item.task
        number = task.number if task.number is not None or not task.flush_l2 else 1
        timing = {
            "repeat": task.repeat,
            "number": number,
            "min_repeat_ms": task.min_repeat_ms,
            "timer": self.e.gpu_timer,
            "flush_bytes": flush_bytes(dict(self.e._tvm_target.attrs), self.e.target.is_gpu) if task.flush_l2 else 0,
        }

        def done(reply):
            self.e._add_profile(reply.get("phases"))
            self._done_with(item.artifact)
            self._settle(item, run_result(reply, item))

        # on a CPU the unscheduled program is the verifier's reference itself (reference.py: the same
        # arithmetic in the same order, compared bit for bit by its test): its verdict is decided,
        # and only its timing is measured (verifying it ran it three times more: 4 s of a `dragon
        # suggest` on an RMSNorm). So is an empty trace's, the same program as a candidate (every
        # workload of a label batch has one)
        unscheduled = item.source.get("baseline") == "unscheduled" or item.thash == EMPTY_TRACE_HASH
        decided = unscheduled and not self.e.target.is_gpu
        self.dispatcher.submit(
            self.devices,
            {
                "op": "run",
                "artifact": item.artifact,
                "entry": item.entry,
                "reference": ref,
                "level": task.level,
                "timing": timing,
                "decided": decided,
            },
            self.e.run_timeout_s,
            done,
        )

    def _finish(self) -> None:
        for item in self.items:
            if item.result is None:  # cannot happen unless a reference failed after its builds
                self._settle(item, Result(Status.BUILD_ERROR, "not measured", level="build"))


def group_sizes(counts: list, workers: int, most: int) -> list:
    """How one call's builds are cut into groups, COUNTS[i] candidates of workload i (a group
    holds one workload's candidates) for WORKERS build workers: one group size for the call, the
    largest up to MOST that still gives every worker a job (a group is one worker's job), and each
    workload's sizes differing by at most one. 64 candidates of one workload on 16 workers with
    MOST 8: 16 groups of 4; 24 workloads of 42 on 16 workers: groups of 7 and 6 (8 at most).
    Cut workload by workload instead, those 42 made groups of 3 (42 / 16 workers), three nvcc
    calls where one would do."""
    counts = [max(0, int(n)) for n in counts]
    need = min(max(1, workers), sum(counts))
    size = 1
    for s in range(max(1, most), 1, -1):
        if sum(-(-n // s) for n in counts) >= need:
            size = s
            break
    cuts = []
    for n in counts:
        count = -(-n // size)
        base, extra = divmod(n, count) if count else (0, 0)
        cuts.append([base + 1] * extra + [base] * (count - extra))
    return cuts


def build_failure(reply: dict) -> Result:
    """The Result of a build job that did not succeed."""
    status = reply.get("status")
    message = reply.get("message", "")
    if status == "replay_error":
        return Result(Status.REPLAY_ERROR, message, build_s=reply.get("build_s"), level="build")
    if status == "timeout":
        return Result(Status.TIMEOUT, "build " + message, level="build")
    if status == "crash":
        return Result(Status.BUILD_ERROR, f"the compiler crashed: {message}", level="build")
    return Result(Status.BUILD_ERROR, message, build_s=reply.get("build_s"), level="build")


def run_result(reply: dict, item: Item) -> Result:
    """The Result of a device job, whatever its reply."""
    status = reply.get("status")
    level = item.task.level
    common = dict(
        build_s=item.build_s,
        run_s=reply.get("run_s"),
        n_checked=reply.get("n_checked", 0),
        max_abs_err=reply.get("max_abs_err"),
        max_rel_err=reply.get("max_rel_err"),
    )
    if status == "ok":
        lat = reply.get("latencies_us") or []
        return Result(
            Status.OK,
            "",
            latency_us=median(lat),
            latencies_us=lat,
            level=level,
            timer=reply.get("timer", "") if lat else "",
            **common,
        )
    if status in ("numeric_mismatch", "unwritten_output", "launch_error", "build_error"):
        s = Status(status)
        stage = reply.get("stage", failed_stage(s, level))
        return Result(s, reply.get("message", ""), level=stage if s is not Status.BUILD_ERROR else "build", **common)
    if status == "timeout":
        return Result(Status.TIMEOUT, "kernel " + reply.get("message", ""), level=level, **common)
    if status == "crash":
        return Result(Status.LAUNCH_ERROR, f"the kernel crashed: {reply.get('message', '')}", level="verify", **common)
    return Result(Status.LAUNCH_ERROR, reply.get("message", str(status)), level=level, **common)
