"""The Engine: measures candidates on a warm worker pool, with a verifier and a results cache.

    engine = Engine("llvm")                       # or "cuda", a tag, a target dict
    results = engine.measure(workload, traces, level="time")
    engine.close()

Builds run in parallel on the CPU (one build worker per core by default); verifying
and timing run on the device, one worker process per GPU (one for the CPU, one per
RPC server). For CPU targets on this machine, device work starts only once every
build of the call has finished, so timings never share the cores with compilers;
for GPUs and remote devices builds and runs overlap. Every candidate gets a Result,
whatever happens to it; only misuse (an unknown level, an unreadable workload, a
verify on a machine without the device) raises.

With `dedupe_sources=True`, candidates whose lowered source is identical are built and
measured once and the others get a copy of the result (`Result.duplicate_of`); with
`device_slots=2`, two device workers share each local GPU, so that one loads its next
library while the other holds the GPU (runs stay one at a time: the GPU's lock). `profile()`
sums the phase timings of every reply (replay, checks, codegen, compile, upload, wait,
verify, time) and the wall time of the calls.

The calls on MetaSchedule's scheduled IRModules (`build_modules`, `measure_modules`,
`run_artifacts`) are written in modules.py.

Worker logs go to the engine's temporary work dir, or to $DRAGON_ENGINE_LOG_DIR when set
(kept after the engine closes).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from pathlib import Path

from dragon_dsl.engine import keys
from dragon_dsl.engine.batch import Batch
from dragon_dsl.engine.cache import ResultsCache
from dragon_dsl.engine.modules import ModulesMixin
from dragon_dsl.engine.pool import Dispatcher, JobQueue, Pool
from dragon_dsl.engine.reference import config_key
from dragon_dsl.engine.result import EngineError, Result, Task
from dragon_dsl.engine.targets import local_gpus, parse_device, resolve_target

__all__ = ["Engine", "EngineError"]


# a workload of at most this many FLOPs computes its verifier reference in one build job (all input
# sets); a bigger one, or one TVM cannot estimate, one job per set. The unscheduled program as
# written runs at 70 MFLOP/s in fp16 on llvm (10^7: 0.15 s a set; the reference program is faster,
# reference.reference_order); a job costs about 0.1 s of its own (on 2 cores:
# benchmarks/bench_references.py, one job per workload 2.0x faster for 60 small workloads)
SMALL_REFERENCE_FLOPS = 1e7

# build workers (compiles, references) run this much below the engine's CPU priority when kernels
# are timed on a local GPU, so that a device worker timing a kernel of a few microseconds gets its
# core the moment it asks: the kernel's launches come from the CPU, and a launch delayed behind a
# compiler shows up as kernel time (two runs on the H200 agreed within 5% on 84-86% of timed
# candidates with it, 74-77% without)
BUILD_NICE = 10


class Engine(ModulesMixin):
    def __init__(
        self,
        target,
        device: str = "local",
        workers: int | None = None,
        timeout_s: float = 60.0,
        cache=None,
        run_timeout_s: float | None = None,
        build_group: int = 1,
        dedupe_sources: bool = False,
        device_slots: int = 1,
        cuda_preamble: str = "trimmed",
        build_order: str = "fifo",
        gpu_timer: str = "blocked",
    ):
        from dragon_dsl.engine.pool import start_fork_server

        if target == "llvm":  # resolving it asks TVM for this machine's CPU: the fork server first
            start_fork_server()
        self.target = resolve_target(target)  # no TVM import for "cuda", nvidia tags, dicts
        if not self.target.is_gpu:
            start_fork_server()  # its import of TVM runs beside this process's own (started once)
        import tvm

        try:
            self._tvm_target = tvm.target.Target(self.target.spec)
        except Exception as exc:  # TVM raises its own error type for unknown tags and kinds
            raise ValueError(f"target {self.target.spec!r}: {str(exc).strip().splitlines()[-1]}") from None
        self.device = parse_device(device)
        self.timeout_s = float(timeout_s)  # a build (and, unless run_timeout_s, a device run)
        # a candidate's verify and time on the device, counted once it holds the device (a GPU's
        # lock): a kernel that hangs keeps every process sharing the GPU waiting until then
        self.run_timeout_s = float(run_timeout_s) if run_timeout_s is not None else self.timeout_s
        if not (self.timeout_s > 0 and self.run_timeout_s > 0):
            raise ValueError(f"timeouts must be positive, got {timeout_s!r} and {run_timeout_s!r}")
        self.workers = int(workers or os.cpu_count() or 1)
        # candidates of one workload compiled together, as one library (build.build_group): one
        # nvcc call for several CUDA candidates; 1 builds each alone
        if not (isinstance(build_group, int) and build_group >= 1):
            raise ValueError(f"build_group must be a positive integer, got {build_group!r}")
        self.build_group = build_group
        if not (isinstance(device_slots, int) and device_slots >= 1):
            raise ValueError(f"device_slots must be a positive integer, got {device_slots!r}")
        self.dedupe_sources = bool(dedupe_sources)
        # the CUDA source TVM compiles at build time on a GPU machine: "trimmed" of the type traits
        # it does not use (nvcc.trim_preamble: the same kernels, faster), or "full", as TVM wrote it
        if cuda_preamble not in ("trimmed", "full"):
            raise ValueError(f"cuda_preamble must be 'trimmed' or 'full', got {cuda_preamble!r}")
        self.cuda_preamble = cuda_preamble
        # which queued build a free build worker takes: "fifo" (in the order the candidates came) or
        # "longest-first" (of the workload whose builds have taken longest so far, pool.JobQueue);
        # longest-first measured no faster (benchmarks/results/gpu_measure)
        if build_order not in ("longest-first", "fifo"):
            raise ValueError(f"build_order must be 'longest-first' or 'fifo', got {build_order!r}")
        self.build_order = build_order
        # how CUDA kernels are timed: "blocked" (device time behind a blocking kernel, launch overhead
        # left out: gpu_timer.py) or "evaluator" (TVM's time_evaluator, as before); CPUs: time_evaluator
        if gpu_timer not in ("blocked", "evaluator"):
            raise ValueError(f"gpu_timer must be 'blocked' or 'evaluator', got {gpu_timer!r}")
        self.gpu_timer = gpu_timer
        self.device_slots = device_slots
        self._sources: dict = {}  # lowered-source claim key -> the Result of its first build
        self._profile: dict = {}
        # a list to get every job of the calls as (pool, worker slot, sent, replied, workload key,
        # status), perf_counter() seconds (benchmarks/bench_measure.py); None: not recorded
        self.timeline: list | None = None
        self.build_jobs = 0  # candidate builds sent to the builders (a group: one)
        self.duplicate_sources = 0  # candidates not compiled: their lowered source was
        if cache is False:
            self.cache = None
        elif isinstance(cache, ResultsCache):
            self.cache = cache
        else:
            self.cache = ResultsCache(cache)
        self._workdir = Path(tempfile.mkdtemp(prefix="dragon-engine-"))
        # worker logs (TVM's crash reports, compiler output) die with the work dir unless kept
        self._log_dir = Path(os.environ.get("DRAGON_ENGINE_LOG_DIR") or self._workdir)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        self._serial = 0
        self._lock = threading.Lock()
        self._workloads: dict = {}
        self._references: dict = {}  # (workload hash, config) -> reference.load path in the work dir
        # builds run below the device workers' priority only where kernels are timed on this
        # machine's GPUs while they compile (BUILD_NICE); elsewhere a niced build would only lose
        # its core to other work and run into its timeout
        self._build_nice = BUILD_NICE if self.target.is_gpu and not self.device.is_remote and local_gpus() else 0
        self._builders = Pool(
            "build",
            self.workers,
            self._build_options,
            self._log_dir,
            queue=JobQueue(longest_first=build_order == "longest-first"),
            gpu=self.target.is_gpu,
        )
        self._devices: Pool | None = None
        self._finalizer = weakref.finalize(self, _shutdown, [self._builders], self._workdir)

    # --- public API -----------------------------------------------------------------------
    def measure(
        self,
        workload,
        traces,
        level: str = "time",
        seeds: int = 3,
        repeat: int = 5,
        number: int | None = None,
        flush_l2: bool = False,
        min_repeat_ms: float = 5.0,
        use_cache: bool = True,
    ) -> list:
        """One Result per trace, in order (duplicates are measured once)."""
        return self.run(
            [
                Task(
                    workload,
                    trace,
                    level=level,
                    seeds=seeds,
                    repeat=repeat,
                    number=number,
                    min_repeat_ms=min_repeat_ms,
                    flush_l2=flush_l2,
                    use_cache=use_cache,
                )
                for trace in traces
            ]
        )

    def baseline(self, workload, kind: str = "unscheduled", level: str = "time", **timing) -> Result:
        """The workload built as it is ("unscheduled") or with dlight's default GPU rules ("dlight")."""
        return self._run([self._baseline_pair(workload, kind, level, timing)])[0]

    def baselines(self, workloads, kind: str = "unscheduled", level: str = "time", **timing) -> list:
        """`baseline` of several workloads in one call: their builds run on every build worker at once."""
        return self._run([self._baseline_pair(w, kind, level, timing) for w in workloads])

    def _baseline_pair(self, workload, kind: str, level: str = "time", timing: dict | None = None) -> tuple:
        if kind not in ("unscheduled", "dlight"):
            raise ValueError(f"baseline kind {kind!r}: expected 'unscheduled' or 'dlight'")
        if kind == "dlight" and not self.target.is_gpu:
            raise ValueError("the dlight baseline applies dlight's GPU rules: it needs a GPU target")
        return Task(workload, ["baseline", kind], level=level, **(timing or {})), {"baseline": kind}

    def prepare(self, workloads, seeds: int = 3, strict: bool = True) -> dict:
        """Compute (or load from the cache) the verifier's references of several workloads at once,
        in parallel on the build workers. The unscheduled workload is the reference, and it is
        slow for big ones (conv3d c3d_3: minutes on one core), so a long run can pay it up front.
        A reference that fails raises EngineError; with STRICT false the failures are returned
        instead, {workload hash: message} (an evaluation leaves those workloads out)."""
        with self._lock:
            dispatcher = Dispatcher([self._builders])
            failed = {}
            for source in workloads:
                wl = self._workload(source)
                if self._known_reference(wl, seeds) is not None:
                    continue

                def done(message, wl=wl):
                    if message is not None:
                        failed[wl.hash] = message

                self._submit_reference(dispatcher, wl, seeds, done)
            dispatcher.run()
        if failed and strict:
            raise EngineError(
                "; ".join(f"the unscheduled workload {h} failed as a reference on llvm: {m}" for h, m in failed.items())
            )
        return failed

    def reference(self, workload, seeds: int = 3):
        """The verifier's reference of a workload (engine/reference.py's Reference): computed, or
        loaded from the results cache (large ones from their own file beside it)."""
        from dragon_dsl.engine import reference

        self.prepare([workload], seeds=seeds)
        path = self._known_reference(self._workload(workload), seeds)
        return reference.load(path)

    def run(self, tasks, baselines=(), on_result=None) -> list:
        """One Result per Task, in order; then one per (workload, kind) of `baselines`, measured
        like `baseline(workload, kind)` in the same call, so that their builds run beside the
        tasks' instead of one after another. `on_result(index, result)` is called for each as
        soon as it is decided (in the caller's thread), before the call returns."""
        return self._run(
            [(t, {"trace": t.trace}) for t in tasks]
            + [self._baseline_pair(workload, kind) for workload, kind in baselines],
            on_result,
        )

    def profile(self, reset: bool = False) -> dict:
        """Seconds summed over the replies since the engine started (or the last reset): build
        phases (replay, checks, codegen, compile), device phases (upload, wait, verify, time),
        `parse` (a build worker loading a workload, once per worker), `main` (the seconds the
        engine's own process spent on replies), `wall` (the calls' own time), `build_span` (from a
        call's start to its last build reply:
        wall - build_span is the device's tail after the builds), `devices` (device workers) and
        `idle` (device-seconds in which no candidate was verified or timed: devices x wall -
        verify - time)."""
        out = dict(self._profile)
        devices = len(self._devices.workers) if self._devices is not None else 0
        if self._devices is not None and not self.device.is_remote and self.target.is_gpu:
            devices = max(1, devices // self.device_slots)  # GPUs, not processes
        out["devices"] = devices
        out["idle"] = max(0.0, devices * out.get("wall", 0.0) - out.get("verify", 0.0) - out.get("time", 0.0))
        if reset:
            self._profile = {}
        return out

    def _add_profile(self, phases) -> None:
        for name, seconds in (phases or {}).items():
            if isinstance(seconds, (int, float)):
                self._profile[name] = self._profile.get(name, 0.0) + float(seconds)

    def _claim_dir(self) -> Path:
        """The folder where build workers claim lowered sources (dedupe_sources)."""
        folder = self._workdir / "claims"
        folder.mkdir(exist_ok=True)
        return folder

    def stats(self) -> dict:
        """Build jobs sent (a group of candidates is one), worker restarts, and how device workers
        got CUDA binaries (cubins from the build vs compiled again at load time)."""
        out = {
            "build_jobs": self.build_jobs,
            "duplicate_sources": self.duplicate_sources,
            "build_restarts": self._builders.restarts,
            "device_restarts": self._devices.restarts if self._devices else 0,
        }
        if self._devices is not None and not self.device.is_remote:
            replies = []
            with self._lock:
                d = Dispatcher([self._devices])
                for _ in self._devices.workers:
                    d.submit(self._devices, {"op": "stats"}, 30.0, replies.append)
                d.run()
            for key in ("cubin_hits", "cubin_misses"):
                out[key] = sum(r.get(key, 0) for r in replies)
        return out

    def close(self) -> None:
        pools = [self._builders] + ([self._devices] if self._devices else [])
        self._finalizer.detach()
        _shutdown(pools, self._workdir)
        if self.cache is not None:
            self.cache.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- workers ----------------------------------------------------------------------------
    def _build_options(self, slot: int) -> dict:
        return {
            "role": "build",
            "target": self.target.spec,
            "env": {"TVM_NUM_THREADS": "1"},
            "cuda_preamble": self.cuda_preamble,
            "nice": self._build_nice,
        }

    def _device_pool(self) -> Pool:
        if self._devices is not None:
            return self._devices
        base = {
            "role": "device",
            "target": self.target.spec,
            "device_type": self.target.device_type,
            "session_timeout": self.run_timeout_s * 2 + 30,
        }
        if self.device.is_remote:
            n = self._remote_servers()
            remote = {"host": self.device.host, "port": self.device.port, "key": self.device.key}
            per_slot = [{**base, "remote": remote} for _ in range(n)]
        elif self.target.is_gpu:
            n = len(local_gpus())
            if n == 0:
                raise EngineError(
                    "this machine has no GPU: level 'build' works here; "
                    "'verify' and 'time' need a GPU or an rpc:// device"
                )
            # one process owns each GPU, or device_slots processes share it (taking turns: its lock)
            per_slot = [{**base, "index": slot % n} for slot in range(n * self.device_slots)]
        else:
            threads = str(self.target.num_cores or os.cpu_count() or 1)
            per_slot = [{**base, "env": {"TVM_NUM_THREADS": threads}}]  # one process: timings never overlap
        self._devices = Pool("device", len(per_slot), per_slot.__getitem__, self._log_dir, gpu=self.target.is_gpu)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _shutdown, [self._builders, self._devices], self._workdir)
        return self._devices

    def _remote_servers(self) -> int:
        """How many device workers a tracker gets: one per registered server, at most `workers`."""
        from dragon_dsl.engine.devices import count_servers

        try:
            n = count_servers(self.device.host, self.device.port, self.device.key)
        except Exception as exc:  # the tracker's client raises plain errors when it is unreachable
            raise EngineError(f"RPC tracker {self.device.host}:{self.device.port}: {exc}") from None
        if n == 0:
            raise EngineError(f"no RPC server is registered under key {self.device.key!r}")
        return max(1, min(n, self.workers))

    def _next_dir(self, prefix: str) -> Path:
        self._serial += 1
        return self._workdir / f"{prefix}{self._serial}"

    # --- one call -------------------------------------------------------------------------
    def _workload(self, source) -> keys.Workload:
        key = source if isinstance(source, (str, Path)) else None
        if key is not None and key in self._workloads:
            return self._workloads[key]
        wl = keys.load(source)
        if key is not None:
            self._workloads[key] = wl
        return wl

    def _run(self, pairs, on_result=None) -> list:
        with self._lock:
            return Batch(self, pairs, on_result).run()

    # --- references -----------------------------------------------------------------------
    def _known_reference(self, wl: keys.Workload, seeds: int) -> str | None:
        """The reference's path in the work dir, from memory or the results cache, or None."""
        config = config_key(seeds)
        path = self._references.get((wl.hash, config))
        if path is None and self.cache is not None:
            kept = self.cache.reference_path(wl.hash, config)  # a large one: read where it is kept
            if kept is not None:
                self._references[(wl.hash, config)] = str(kept)
                return str(kept)
            data = self.cache.get_reference(wl.hash, config)
            if data is not None:
                path = str(self._workdir / f"ref-{wl.hash}-{seeds}.npz")
                Path(path).write_bytes(data)
                self._references[(wl.hash, config)] = path
        return path

    def _submit_reference(self, dispatcher, wl: keys.Workload, seeds: int, done) -> None:
        """Compute a reference in the build workers, as a folder of parts, and store it: one job per
        input set when the workload is big (the unscheduled program is slow: its sets run in
        parallel), one job for every set when it is small (a job's own cost is then most of it).
        `done(None)` on success, `done(message)` when a part failed."""
        from dragon_dsl.engine.inputs import set_names

        folder = self._workdir / f"ref-{wl.hash}-{seeds}"  # reference.load's folder of parts
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        config = config_key(seeds)
        n_sets = len(set_names(seeds))
        small = 0 < wl.flops <= SMALL_REFERENCE_FLOPS
        parts_of = [list(range(n_sets))] if small else [[i] for i in range(n_sets)]
        answered: list = []
        failures: list = []

        def part_done(reply):
            answered.append(reply)
            if reply.get("status") != "ok":
                failures.append(reply.get("message", reply.get("status")))
            if len(answered) < len(parts_of):
                return
            if failures:
                shutil.rmtree(folder, ignore_errors=True)
                done(failures[0])
                return
            # the parts stay where the build workers wrote them: the device workers read them there
            # (a merged copy cost the engine's process seconds for a big workload: 471 MB of
            # arrays read, merged and written again for an RMSNorm of 7671 x 2560); the cache
            # keeps a large one as a copy of its parts (`put_reference_parts`)
            self._references[(wl.hash, config)] = str(folder)
            if self.cache is not None:
                self.cache.put_reference_parts(wl.hash, config, folder)
            done(None)

        for index, only in enumerate(parts_of):
            payload = {
                "op": "reference",
                "wkey": wl.hash,
                "workload": wl.text,
                "seed": wl.seed,
                "n_random": seeds,
                "only": only,
                "out": str(folder / f"part{index}.npz"),
            }
            dispatcher.submit(self._builders, payload, self._reference_timeout(), part_done)

    def _reference_timeout(self) -> float:
        return max(300.0, 10 * self.timeout_s)

    @property
    def device_key(self) -> str:
        """The device as the results cache keys it: GPU latencies taken by another timer are other
        measurements (gpu_timer)."""
        if self.target.is_gpu and self.gpu_timer != "evaluator":
            return f"{self.device.text}|timer={self.gpu_timer}"
        return self.device.text

    def limits(self) -> dict:
        """The timeouts a result was measured under (the results cache keeps timeouts with them)."""
        return {"build_timeout_s": self.timeout_s, "run_timeout_s": self.run_timeout_s}


def _shutdown(pools, workdir) -> None:
    for pool in pools:
        pool.close()
    shutil.rmtree(workdir, ignore_errors=True)
