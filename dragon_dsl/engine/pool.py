"""Warm worker processes, and the loop that feeds them jobs.

A `Pool` keeps `size` worker processes (worker.py), forked from a fork server that has
imported TVM (`worker_context`), each serving jobs until the engine closes. The `Dispatcher`
drives several pools from the caller's thread: it hands queued jobs to idle workers,
waits on their pipes and process sentinels, and turns every way a job can end into
one reply for that job's callback:
  * the worker's own reply;
  * {"status": "timeout"} when the job outlives its timeout: the worker is killed;
  * {"status": "crash"} when the process dies (segfault, abort, os._exit).
A worker may send {"started": true} before its reply: the job's timeout then counts from
that moment (a device worker sends it each time it takes the GPU's lock, so that the wait for
another process's candidate never counts against this one), and {"waiting": true} before it
blocks on that lock: the job then has `waiting_timeout` (the holder's own run is bounded by
its timeout, and its engine kills it after that).
A killed or dead worker is restarted and the pool goes on with its next job. A
reply with "restart": true (a CUDA fault poisons its context) restarts it too.

Which queued job an idle worker gets is its pool's `JobQueue`'s choice: first come, first
served, or (`longest_first`) builds of the workload whose jobs have taken longest so far, so
that a call does not end on a tail of slow compiles while the other workers wait.
"""

from __future__ import annotations

import collections
import multiprocessing
import multiprocessing.connection
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


def waiting_timeout(timeout: float) -> float:
    """How long a job may wait for the GPU's lock: another engine's candidate holds it for at most
    its own timeout (assumed like this one's) plus the time its engine takes to kill it."""
    return 2.0 * timeout + 30.0


STARTUP_TIMEOUT_S = 300.0  # importing TVM took 9 s on the H200 host (TVM's tensor intrinsics 31 s, before their cache)
MAX_START_FAILURES = 3


def _log_tail(path: Path, lines: int = 6) -> str:
    """The end of a worker's log, for an error message (the log dies with the engine's work dir;
    a common cause: a script that starts an engine without an `if __name__ == "__main__":` guard,
    which spawned workers run again)."""
    try:
        tail = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()][-lines:]
    except OSError:
        return ""
    return ("; the worker's log ends with:\n    " + "\n    ".join(tail)) if tail else ""


#: what a fork server imports once, before it forks each worker (worker.py imports the rest)
FORKSERVER_PRELOAD = ["numpy", "tvm", "dragon_dsl.engine.worker"]


def worker_context(gpu: bool = False):
    """How worker processes start: forked from a fork server that has imported TVM once
    (a worker is ready in a fraction of a second instead of importing TVM itself: about 3 s of
    CPU each, a third of an engine's start on a 2-core machine), or, with DRAGON_WORKER_START=spawn,
    each a fresh interpreter. Either way the worker takes this process's current environment,
    working folder and import path. Where the fork server cannot start (its socket lives under
    TMPDIR, and a Unix socket's path has at most 107 bytes; Windows has none) workers are spawned.
    GPU: the workers of an engine whose target is a GPU are spawned. CUDA does not survive a fork
    of a process that initialised it, and on an H100 host every CUDA compile of a forked build
    worker (TVM compiles at build time where there is a GPU) failed with cudaErrorInitializationError,
    while spawned workers built and verified the same batch (benchmarks/results/gpu_measure)."""
    global _FORKSERVER_FAILED
    method = os.environ.get("DRAGON_WORKER_START", "forkserver")
    if method not in ("forkserver", "spawn"):
        raise ValueError(f"DRAGON_WORKER_START={method!r}: expected 'forkserver' or 'spawn'")
    if method == "forkserver" and not gpu and not _FORKSERVER_FAILED:
        try:
            ctx = multiprocessing.get_context("forkserver")  # ValueError where there is none (Windows)
            ctx.set_forkserver_preload(FORKSERVER_PRELOAD)
            from multiprocessing import forkserver

            forkserver.ensure_running()  # its import of TVM runs beside the caller's work
            return ctx
        except (OSError, ValueError):
            _FORKSERVER_FAILED = True
    return multiprocessing.get_context("spawn")


_FORKSERVER_FAILED = False


def start_fork_server() -> None:
    """Start the fork server now, if workers are forked and it is not running yet: it imports TVM
    while the caller does its own work (the engine's process imports TVM too). Not for an engine
    whose workers are spawned (a GPU target: `worker_context`)."""
    worker_context()


class PoolError(RuntimeError):
    """A pool cannot run at all (its workers fail to start)."""


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "died"
    if exitcode < 0:
        try:
            return f"died with {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"died with signal {-exitcode}"
    return f"exited with code {exitcode}"


@dataclass
class _Job:
    payload: dict
    timeout: float
    callback: Callable[[dict], None]


class JobQueue:
    """A pool's queued jobs. First in, first out; with `longest_first`, jobs are grouped by
    their payload's (op, workload key) and an idle worker gets the oldest job of the group whose
    replies took longest on average so far (longest processing time first, with estimates
    learned during the call): a group nothing has been measured of goes first while none of its
    jobs runs (one probe each), then counts as the mean of all measured groups. Jobs that are
    not builds of a workload (the verifier's references) keep their order and go before builds.
    Invariant: every appended job is popped exactly once; within a group, order is kept."""

    def __init__(self, longest_first: bool = False):
        self.longest_first = longest_first
        self._groups: dict = {}  # group key -> deque of jobs, in the order groups appeared
        self._seconds: dict = {}  # group key -> [seconds summed, replies]
        self._running: dict = {}  # group key -> jobs sent, not replied
        self._len = 0

    @staticmethod
    def key(job) -> tuple | None:
        payload = job.payload if isinstance(job.payload, dict) else {}
        if payload.get("wkey") is None or payload.get("op") not in ("build", "build_group"):
            return None
        return (payload.get("op"), payload["wkey"])

    def __len__(self) -> int:
        return self._len

    def _group(self, job) -> tuple | None:
        """JOB's group: its key with `longest_first`, else None (one first-in, first-out line)."""
        return self.key(job) if self.longest_first else None

    def append(self, job) -> None:
        group = self._group(job)
        self._groups.setdefault(group, collections.deque()).append(job)
        self._len += 1

    def appendleft(self, job) -> None:
        """JOB back at the head of its group (a worker could not take it)."""
        group = self._group(job)
        self._groups.setdefault(group, collections.deque()).appendleft(job)
        self._len += 1
        if group is not None and self._running.get(group):
            self._running[group] -= 1

    def popleft(self):
        if not self._len:
            raise IndexError("pop from an empty JobQueue")
        group = self._choose()
        jobs = self._groups[group]
        job = jobs.popleft()
        if not jobs:
            del self._groups[group]
        self._len -= 1
        if group is not None:
            self._running[group] = self._running.get(group, 0) + 1
        return job

    def observe(self, job, seconds: float) -> None:
        """JOB's reply came after SECONDS: its group's estimate learns it."""
        group = self._group(job)
        if group is None:
            return
        total = self._seconds.setdefault(group, [0.0, 0])
        total[0] += seconds
        total[1] += 1
        if self._running.get(group):
            self._running[group] -= 1

    def _choose(self):
        if self._groups.get(None):
            return None
        measured = [t / n for t, n in self._seconds.values() if n]
        prior = sum(measured) / len(measured) if measured else 0.0
        best, best_cost = None, None
        for group, jobs in self._groups.items():
            if group is None or not jobs:
                continue
            t, n = self._seconds.get(group, (0.0, 0))
            cost = t / n if n else (float("inf") if not self._running.get(group) else prior)
            if best_cost is None or cost > best_cost:
                best, best_cost = group, cost
        return best


@dataclass
class _Worker:
    slot: int
    proc: object = None
    conn: object = None
    ready: bool = False
    job: _Job | None = None
    deadline: float = 0.0
    started: float = 0.0
    start_failures: int = 0
    generation: int = 0
    assigned: float = 0.0  # perf_counter() when its job was sent


@dataclass
class Pool:
    name: str
    size: int
    options: Callable[[int], dict]  # slot -> worker options
    log_dir: Path
    workers: list = field(default_factory=list)
    queue: JobQueue = field(default_factory=JobQueue)
    restarts: int = 0
    gpu: bool = False  # the workers serve a GPU target: spawned (worker_context)

    def __post_init__(self):
        self._ctx = worker_context(self.gpu)
        self.workers = [_Worker(slot) for slot in range(self.size)]
        for w in self.workers:
            self._start(w)

    def _start(self, w: _Worker) -> None:
        from dragon_dsl.engine import worker

        options = dict(self.options(w.slot))
        options["log"] = str(self.log_dir / f"{self.name}-{w.slot}.log")
        # a forked worker has the fork server's environment: it takes this process's as it is now
        options["environ"] = dict(os.environ)
        parent, child = self._ctx.Pipe(duplex=True)
        w.proc = self._ctx.Process(
            target=worker.main, args=(child, options), daemon=True, name=f"dragon-{self.name}-{w.slot}"
        )
        w.proc.start()
        child.close()
        w.conn, w.ready, w.job, w.started = parent, False, None, time.monotonic()
        w.generation += 1

    def restart(self, w: _Worker) -> None:
        self._stop(w, kill=True)
        self.restarts += 1
        self._start(w)

    def _stop(self, w: _Worker, kill: bool) -> None:
        if w.proc is None:
            return
        if kill and w.proc.is_alive():
            w.proc.kill()
        w.proc.join(timeout=10)
        try:
            w.conn.close()
        except OSError:
            pass
        w.proc = None

    def close(self) -> None:
        for w in self.workers:
            if w.proc is not None and w.proc.is_alive():
                try:
                    w.conn.send(None)
                except OSError:
                    pass
        deadline = time.monotonic() + 5
        for w in self.workers:
            if w.proc is not None:
                w.proc.join(timeout=max(0.0, deadline - time.monotonic()))
            self._stop(w, kill=True)

    def idle(self) -> list:
        return [w for w in self.workers if w.ready and w.job is None and w.proc is not None]


class Dispatcher:
    """Runs jobs on pools until none is queued or running."""

    def __init__(self, pools: list):
        self.pools = list(pools)
        self.callback_s = 0.0  # seconds this process spent in the jobs' callbacks
        # when a list: (pool, worker slot, sent, replied, the job's workload key, reply status) per job
        self.timeline: list | None = None

    def submit(self, pool: Pool, payload: dict, timeout: float, callback: Callable[[dict], None]) -> None:
        if pool not in self.pools:
            self.pools.append(pool)
        pool.queue.append(_Job(payload, timeout, callback))

    def busy(self) -> bool:
        return any(p.queue or any(w.job for w in p.workers) for p in self.pools)

    def run(self) -> None:
        while self.busy():
            self._assign()
            self._wait_once()

    def _assign(self) -> None:
        for pool in self.pools:
            for w in pool.idle():
                if not pool.queue:
                    break
                self._send_next(pool, w)

    def _send_next(self, pool: Pool, w: _Worker) -> None:
        """Hand idle worker W its pool's next queued job, if any."""
        if pool is None or not pool.queue or w.job is not None or not w.ready or w.proc is None:
            return
        job = pool.queue.popleft()
        try:
            w.conn.send(job.payload)
        except OSError:
            pool.queue.appendleft(job)
            pool.restart(w)
            return
        w.job, w.deadline = job, time.monotonic() + job.timeout
        w.assigned = time.perf_counter()

    def _wait_once(self) -> None:
        waitables, owner = [], {}
        now = time.monotonic()
        deadlines = []
        for pool in self.pools:
            for w in pool.workers:
                if w.proc is None:
                    continue
                for obj in (w.conn, w.proc.sentinel):
                    waitables.append(obj)
                    owner[id(obj)] = (pool, w, w.generation)
                if w.job is not None:
                    deadlines.append(w.deadline)
                elif not w.ready:
                    deadlines.append(w.started + STARTUP_TIMEOUT_S)
        timeout = max(0.0, min(deadlines) - now) if deadlines else 1.0
        for obj in multiprocessing.connection.wait(waitables, timeout=min(timeout, 5.0)):
            pool, w, generation = owner[id(obj)]
            if w.proc is None or w.generation != generation:
                continue  # this process was already handled (and restarted) through its other waitable
            if obj is w.conn:
                self._receive(pool, w)
            elif not w.conn.poll():
                self._died(pool, w)
        self._expire(time.monotonic())

    def _receive(self, pool: Pool, w: _Worker) -> None:
        try:
            message = w.conn.recv()
        except (EOFError, OSError):
            self._died(pool, w)
            return
        if not w.ready:
            if message.get("ready"):
                w.ready, w.start_failures = True, 0
                return
            self._start_failed(pool, w, message.get("message", "no reason given"))
            return
        if message.get("started"):
            if w.job is not None:
                w.deadline = time.monotonic() + w.job.timeout
            return
        if message.get("waiting"):
            if w.job is not None:
                w.deadline = time.monotonic() + waiting_timeout(w.job.timeout)
            return
        job, w.job = w.job, None
        if job is not None and pool is not None:
            pool.queue.observe(job, time.perf_counter() - w.assigned)
        if self.timeline is not None and job is not None:
            self.timeline.append(
                (
                    pool.name if pool is not None else "",
                    w.slot,
                    w.assigned,
                    time.perf_counter(),
                    job.payload.get("wkey") if isinstance(job.payload, dict) else None,
                    message.get("status"),
                )
            )
        if message.get("restart"):
            pool.restart(w)
        else:
            self._send_next(pool, w)  # the worker starts its next job while this one's reply is handled
        if job is not None:
            t0 = time.perf_counter()
            job.callback(message)
            self.callback_s += time.perf_counter() - t0

    def _died(self, pool: Pool, w: _Worker) -> None:
        w.proc.join(timeout=5)
        exitcode = w.proc.exitcode
        how = describe_exit(exitcode)
        job, w.job = w.job, None
        if not w.ready:
            self._start_failed(pool, w, f"the worker {how} while starting")
            return
        pool.restart(w)
        if job is not None:
            pool.queue.observe(job, time.perf_counter() - w.assigned)
            job.callback({"status": "crash", "message": f"the worker {how}", "exitcode": exitcode})

    def _start_failed(self, pool: Pool, w: _Worker, why: str) -> None:
        w.start_failures += 1
        if w.start_failures >= MAX_START_FAILURES:
            pool._stop(w, kill=True)
            log = pool.log_dir / f"{pool.name}-{w.slot}.log"
            raise PoolError(f"{pool.name} worker cannot start: {why}{_log_tail(log)}")
        failures = w.start_failures
        pool.restart(w)
        w.start_failures = failures

    def _expire(self, now: float) -> None:
        for pool in self.pools:
            for w in pool.workers:
                if w.proc is None:
                    continue
                if w.job is not None and now >= w.deadline:
                    job, w.job = w.job, None
                    pool.restart(w)
                    pool.queue.observe(job, time.perf_counter() - w.assigned)
                    job.callback(
                        {"status": "timeout", "message": f"killed after {job.timeout:g} s (the worker was restarted)"}
                    )
                elif w.job is None and not w.ready and now >= w.started + STARTUP_TIMEOUT_S:
                    self._start_failed(pool, w, f"not ready after {STARTUP_TIMEOUT_S:g} s")
