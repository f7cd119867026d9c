"""Long-lived worker processes for TVM work, with timeouts and cancellation.

The server's event loop never imports TVM and never waits on it: a task is
sent to a worker process (started with the spawn method), and the loop awaits
the answer on a thread. A worker runs one task at a time. A task that runs
past its timeout, or whose caller is cancelled, is stopped by killing the
worker; the next task starts a fresh one. Compiled code and TVM's C++ can
neither be interrupted nor trusted not to crash, so a process boundary is the
only reliable one.
"""

from __future__ import annotations

import asyncio
import atexit
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


class WorkerError(RuntimeError):
    """The task raised (the message is the worker's) or the worker died."""


class WorkerTimeout(WorkerError):
    pass


_LIVE: set[Worker] = set()


@atexit.register
def _kill_all():  # pragma: no cover - runs at interpreter exit
    for w in list(_LIVE):
        w.kill()


class Worker:
    def __init__(self, name: str):
        self.name = name
        self._proc = None
        self._conn = None
        self._lock = asyncio.Lock()
        self.tasks_run = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        # Not a daemon: daemonic processes cannot start children, and a measurement
        # engine or TVM's builders may. The server kills its workers when it exits.
        proc = ctx.Process(target=serve, args=(child, os.getpid()), name=f"dragon-lsp-{self.name}", daemon=False)
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        _LIVE.add(self)

    def kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        _LIVE.discard(self)
        if proc is not None and proc.is_alive():
            proc.kill()
            proc.join(timeout=5)
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass

    async def call(self, task: str, *args, timeout: float, progress: Callable[..., None] | None = None) -> Any:
        """Run `dragon_lsp.tasks.<task>(*args)` in the worker; raise WorkerTimeout, WorkerError or CancelledError."""
        async with self._lock:
            if not self.alive:
                self._start()
            loop = asyncio.get_running_loop()
            conn = self._conn

            def roundtrip():
                conn.send((task, args))
                while True:
                    kind, payload = conn.recv()
                    if kind == "progress":
                        if progress is not None:
                            loop.call_soon_threadsafe(progress, *payload)
                        continue
                    return kind, payload

            fut = loop.run_in_executor(None, roundtrip)
            try:
                kind, payload = await asyncio.wait_for(fut, timeout)
            except asyncio.TimeoutError:
                self.kill()
                raise WorkerTimeout(f"{task} took longer than {timeout:g} s; the worker was stopped") from None
            except asyncio.CancelledError:
                self.kill()
                raise
            except (EOFError, OSError, BrokenPipeError) as exc:
                self.kill()
                raise WorkerError(f"the {self.name} worker stopped during {task} ({type(exc).__name__})") from None
            self.tasks_run += 1
            if kind == "error":
                raise WorkerError(payload)
            return payload


def serve(conn, parent_pid: int) -> None:  # pragma: no cover - runs in the worker process
    """The worker's main loop: one task at a time until the pipe closes or the server dies."""
    # The server speaks LSP on fd 1: nothing the worker or TVM prints may go there.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()
    from dragon_lsp import tasks

    while True:
        try:
            name, args = conn.recv()
        except (EOFError, OSError):
            break

        def progress(message: str, percentage: int | None = None):
            conn.send(("progress", (message, percentage)))

        try:
            fn = getattr(tasks, name)
            result = fn(*args, progress=progress) if name in tasks.WITH_PROGRESS else fn(*args)
            conn.send(("ok", result))
        except BaseException as exc:
            try:
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
            except (OSError, EOFError):
                break
    os._exit(0)


def _watch_parent(parent_pid: int) -> None:  # pragma: no cover
    while True:
        time.sleep(1.0)
        if os.getppid() != parent_pid:
            os._exit(0)
