"""The worker process: imports TVM once, then serves jobs from the engine over a pipe.

Started with multiprocessing's "spawn" context (never forked from a process that
imported TVM). A build worker answers `reference` and `build` jobs; a device worker
answers `run` jobs for one device (one GPU, the CPU, or an RPC tracker). Every job
gets one reply; a job that hangs or kills the process is handled by the pool
(pool.py), which kills and restarts the worker. stdout and stderr go to a log file
so that TVM's crash reports do not land in the caller's terminal.
A worker started with the option `nice` lowers its own CPU priority by that much
(engine.BUILD_NICE for build workers).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from collections import OrderedDict
from pathlib import Path


def main(conn, options: dict) -> None:
    _exit_with_parent()
    _redirect_output(options.get("log"))
    if "environ" in options:  # the engine's environment now, not the fork server's at its start
        os.environ.clear()
        os.environ.update(options["environ"])
    for name, value in options.get("env", {}).items():
        os.environ[name] = value
    if options.get("nice"):
        os.nice(int(options["nice"]))
    try:
        state = _State(options, notify=conn.send)
    except Exception as exc:  # a worker that cannot start says why, then ends
        conn.send({"ready": False, "message": f"{type(exc).__name__}: {exc}"})
        return
    conn.send({"ready": True, "pid": os.getpid()})
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            reply = state.handle(job)
        except Exception as exc:  # a bug in a handler must not take the worker down; the engine reports it
            traceback.print_exc()
            reply = {"status": "error", "message": f"internal error: {type(exc).__name__}: {exc}"}
        conn.send(reply)


def _exit_with_parent() -> None:
    """End this worker when the engine's process is gone. A worker notices a closed pipe only
    between jobs; one in the middle of a long job (a big reference, a hanging kernel) would run
    on as an orphan once its parent is killed (seen: a search killed with SIGTERM left a worker
    burning a core for 25 minutes). The engine's process is multiprocessing's parent process
    (whose sentinel ends with it), not the OS parent: a forked worker's OS parent is the fork
    server, which lives as long as any worker it forked."""
    import multiprocessing
    import multiprocessing.connection
    import threading

    sentinel = multiprocessing.parent_process().sentinel  # a worker is always a Pool's Process

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])  # returns once the engine's process is gone
        os._exit(3)

    threading.Thread(target=watch, name="dragon-parent-watch", daemon=True).start()


def _redirect_output(path) -> None:
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


class _State:
    def __init__(self, options: dict, notify=lambda message: None):
        import numpy  # noqa: F401  (warm)
        import tvm

        self.options = options
        self.notify = notify  # a message to the pool before the job's reply (pool.py: "started")
        self.role = options["role"]
        self.target = tvm.target.Target(options["target"])
        self.workloads: OrderedDict = OrderedDict()
        self.references: OrderedDict = OrderedDict()
        self.staged: OrderedDict = OrderedDict()  # reference path -> run.Staged on this worker's device
        self._staged_session = None  # the remote session self.staged lives in
        self.device = None
        self._loaded = None  # (artifact path, what device.load returned)
        self._blocked_error: str | None = None  # why this worker cannot use gpu_timer ("": it can)
        self._remote_timer = None  # (session, its server's gpu_timer function or None)
        if self.role == "device":
            from dragon_dsl.engine import devices

            remote = options.get("remote")
            device_type = options["device_type"]
            if remote:
                self.device = devices.RemoteDevice(
                    remote["host"], remote["port"], remote["key"], device_type, options.get("session_timeout", 60.0)
                )
            else:
                self.device = devices.LocalDevice(device_type, options.get("index", 0))
                if device_type == "cuda":
                    devices.install_cubin_hook()
            # a local GPU's lock (None for the CPU and RPC servers), held for each stretch of GPU
            # work and released while outputs are compared on the CPU (devices.GpuHold); a job's
            # timeout counts from each time it is taken, never over a wait for another process's
            # candidate (pool.py: the "waiting" and "started" messages)
            self.gpu = self.device.hold(
                on_wait=lambda: notify({"waiting": True}), on_held=lambda: notify({"started": True})
            )
        else:
            from dragon_dsl.engine.build import install_compile_probe
            from dragon_dsl.engine.nvcc import ensure_on_path

            ensure_on_path()
            install_compile_probe(trim=options.get("cuda_preamble", "trimmed") == "trimmed")

    def handle(self, job: dict) -> dict:
        op = job["op"]
        if op == "ping":
            return {"status": "ok", "pid": os.getpid()}
        if op == "count_devices":
            return {"status": "ok", "count": self.device.count()}
        if op == "stats":
            from dragon_dsl.engine import devices

            return {"status": "ok", **devices.counters()}
        if op == "reference":
            return self._reference(job)
        if op == "build":
            return self._build(job)
        if op == "build_group":
            from dragon_dsl.engine.build import build_group

            mod = self._workload(job) if job.get("wkey") else None
            return {
                "status": "ok",
                "replies": build_group(mod, job["sources"], self.target, Path(job["out"]), job.get("claim")),
            }
        if op == "run":
            return self._run(job)
        raise ValueError(f"unknown job {op!r}")

    # --- build side -------------------------------------------------------------------------
    def _workload(self, job):
        key = job["wkey"]
        if key not in self.workloads:
            import tvm

            text = job.get("workload")
            self.workloads[key] = tvm.ir.load_json(job["module"]) if text is None else _parse(text)
            while len(self.workloads) > 32:
                self.workloads.popitem(last=False)
        return self.workloads[key]

    def _reference(self, job) -> dict:
        from dragon_dsl.engine import reference

        t0 = time.perf_counter()
        ref = reference.compute(self._workload(job), job["seed"], job["n_random"], job.get("only"))
        reference.save(ref, job["out"])
        return {"status": "ok", "path": job["out"], "seconds": time.perf_counter() - t0}

    def _build(self, job) -> dict:
        from dragon_dsl.engine.build import build

        t0 = time.perf_counter()
        mod = self._workload(job) if job.get("wkey") else None
        parsed = time.perf_counter() - t0
        reply = build(mod, job["source"], self.target, Path(job["out"]), job.get("claim"))
        reply.setdefault("phases", {})["parse"] = parsed  # the workload, once per worker
        return reply

    # --- device side ------------------------------------------------------------------------
    def _reference_for(self, path):
        if path not in self.references:
            from dragon_dsl.engine import reference

            self.references[path] = reference.load(path)
            while len(self.references) > 8:
                self.references.popitem(last=False)
        return self.references[path]

    def _staged_for(self, path, dev, fresh: bool = False, session=None):
        """The reference staged on the device; kept for the next candidates (on a remote device,
        those of the same session: the arrays live in it)."""
        from dragon_dsl.engine.run import Staged

        if session is not None and session is not self._staged_session:
            self.staged.clear()
            self._staged_session = session
        if fresh or path not in self.staged:
            self.staged[path] = Staged(dev, self._reference_for(path))
        self.staged.move_to_end(path)
        while len(self.staged) > 4:
            self.staged.popitem(last=False)
        return self.staged[path]

    def _run(self, job) -> dict:
        t0 = time.perf_counter()
        try:
            module, dev, session = self._load(job["artifact"])
        except Exception as exc:  # loading compiles device code on some paths: a failure is a build failure
            return {
                "status": "build_error",
                "message": f"the built module failed to load: {_last_line(exc)}",
                "run_s": time.perf_counter() - t0,
            }
        t_loaded = time.perf_counter()
        lock = self.gpu
        if lock is None:
            self.notify({"started": True})
        else:
            lock.waited = 0.0
        reply = self._verify_and_time(job, module, dev, session, lock)
        waited = lock.waited if lock else 0.0
        phases = reply.setdefault("phases", {})
        # run_s is this candidate's own: not the time waited for another process's candidate
        reply["run_s"] = max(0.0, time.perf_counter() - t0 - waited)
        phases["upload"] = t_loaded - t0  # loading the library (on a remote device: its upload too)
        phases["wait"] = waited  # waiting for the device's lock (another process's candidate)
        return reply

    def _load(self, artifact: str):
        """The loaded library: kept for the next job on a local device, since a group's candidates
        share one (build.build_group); on a remote device, every task uploads its own (the
        session is kept while young: devices.RemoteDevice)."""
        if self.options.get("remote"):
            return self.device.load(artifact)
        if self._loaded is None or self._loaded[0] != artifact:
            self._loaded = None  # the old library goes before the next one loads
            self._loaded = (artifact, self.device.load(artifact))
        return self._loaded[1]

    def _verify_and_time(self, job, module, dev, session, lock) -> dict:
        """The reply of a run job: verdict, latencies, phases (LOCK: devices.GpuHold or None; the
        phases leave out the waits for it; run_s is set by the caller)."""
        from dragon_dsl.engine.run import LaunchError, random_tensors, verify_staged

        gpu = lock.hold if lock is not None else contextlib.nullcontext
        waited = (lambda: lock.waited) if lock is not None else (lambda: 0.0)
        reply: dict = {"status": "ok", "n_checked": 0}
        stage = "verify"
        t_verify, w_verify = time.perf_counter(), waited()

        def verify_s() -> float:  # since verification began, less the waits for the lock
            return time.perf_counter() - t_verify - (waited() - w_verify)

        phases: dict = {}
        try:
            entry = job.get("entry", "main")
            func = module[entry]
            if job.get("reference") and job.get("decided"):  # the reference's own program: nothing to compare
                staged = self._staged_for(job["reference"], dev, session=session)
            elif job.get("reference"):
                reply, staged = verify_staged(
                    func,
                    self._staged_for(job["reference"], dev, session=session),
                    # called inside verify_staged, before `del session` below
                    lambda: self._staged_for(job["reference"], dev, fresh=True, session=session),  # noqa: F821
                    gpu,
                )
                if reply["status"] != "ok":
                    reply["phases"] = {"verify": verify_s()}
                    return reply
            phases["verify"] = verify_s()
            if job["level"] == "time":
                stage = "time"
                t = job["timing"]
                with gpu():
                    t_time = time.perf_counter()
                    tensors = staged.tensors(0) if job.get("reference") else random_tensors(dev, job["args_info"])
                    reply["latencies_us"], reply["timer"] = self._time(module, dev, session, tensors, entry, t)
                    phases["time"] = time.perf_counter() - t_time
        except Exception as exc:  # LaunchError, or the runtime failing to copy data to or from the device
            # a CUDA fault poisons the context: the pool restarts this worker before its next job
            message = str(exc) if isinstance(exc, LaunchError) else _last_line(exc)
            if session is not None:
                from dragon_dsl.engine.devices import explain_remote

                message = explain_remote(message)
            phases.setdefault("verify" if stage == "verify" else "time", verify_s())
            return {
                "status": "launch_error",
                "message": message,
                "stage": stage,
                "restart": self.device.device_type != "cpu" or session is not None,
                "phases": phases,
            }
        finally:
            del session
        reply["phases"] = phases
        return reply

    def _time(self, module, dev, session, tensors, entry: str, t: dict) -> tuple:
        """(per-call latencies in us, the timer that took them): a CUDA kernel behind a blocking kernel
        when the job asks for it and this worker can (gpu_timer; on a remote device: the server's
        registered timer), else TVM's time_evaluator (run.time_kernel)."""
        from dragon_dsl.engine.run import LaunchError, _first_line, time_kernel

        settings = dict(
            repeat=t["repeat"], number=t["number"], min_repeat_ms=t["min_repeat_ms"], flush_bytes=t["flush_bytes"]
        )
        blocked = self._blocked_timer(dev, session) if t.get("timer") == "blocked" else None
        if blocked is None:
            return time_kernel(module, dev, tensors, entry=entry, **settings), "evaluator"
        try:
            return blocked(module, tensors, entry, settings), "blocked"
        except Exception as exc:  # a fault while timing is a launch failure
            raise LaunchError(_first_line(exc)) from None

    def _blocked_timer(self, dev, session):
        """fn(module, tensors, entry, settings) -> latencies timing behind a blocking kernel here or on
        the session's server, or None where it cannot run (not CUDA, no cuda-bindings or a set-up
        that failed here, a stock server there). Decided once per worker, and once per session."""
        from dragon_dsl.engine import gpu_timer

        if self.device.device_type != "cuda":
            return None
        if session is not None:
            if self._remote_timer is None or self._remote_timer[0] is not session:
                try:
                    remote = session.get_function(gpu_timer.REMOTE_FUNC)
                except Exception:  # a stock TVM RPC server: time_evaluator there
                    remote = None
                self._remote_timer = (session, remote)
            remote = self._remote_timer[1]
            if remote is None:
                return None
            return lambda module, tensors, entry, s: json.loads(str(remote(module, entry, json.dumps(s), *tensors)))
        if self._blocked_error is None:
            self._blocked_error = gpu_timer.available() or ""
            if not self._blocked_error:
                try:
                    gpu_timer.timer_for(dev)
                except Exception as exc:  # the timer's own set-up: this worker times as TVM does
                    self._blocked_error = f"{type(exc).__name__}: {exc}"
            if self._blocked_error:
                print(
                    f"blocked timer unavailable, timing with time_evaluator: {self._blocked_error}",
                    file=sys.stderr,
                    flush=True,
                )
        if self._blocked_error:
            return None
        return lambda module, tensors, entry, s: gpu_timer.time_module(module, dev, tensors, entry=entry, **s)


def _parse(text: str):
    from dragon_dsl.tvm.workload import load_workload

    return load_workload(text)


def _last_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:400]
